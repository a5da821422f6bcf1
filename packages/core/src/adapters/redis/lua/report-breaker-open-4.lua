--[[
  Records that one worker's own breaker for a dependency opened, and opens the breaker for
  the whole fleet once enough distinct workers reported within the window: one worker with
  a broken path to a dependency (a frozen proxy on its node) opens its own breaker only.

  Input:
    KEYS[1] reporters sorted set  rein:breaker:{<dependency>}:reporters  (member = worker id, score = when its breaker opened, ms)
    KEYS[2] breaker open flag     rein:breaker:{<dependency>}:open
    KEYS[3] breaker tripped       rein:breaker:{<dependency>}:tripped
    KEYS[4] half-open probe       rein:breaker:{<dependency>}:probe

    ARGV[1] worker id
    ARGV[2] now (ms)
    ARGV[3] window (ms): how long a report counts
    ARGV[4] quorum: distinct workers whose reports open the fleet's breaker
    ARGV[5] reset timeout (ms): how long the fleet's breaker stays open

  Output: 1 the fleet's breaker opened | 0 reported, the quorum not reached
]]
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[2]) - tonumber(ARGV[3]))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[4]) then
  return 0
end
-- Each opening of the fleet's breaker takes a quorum of its own.
redis.call('DEL', KEYS[1], KEYS[4])
redis.call('SET', KEYS[2], '1', 'PX', ARGV[5])
redis.call('SET', KEYS[3], '1')
return 1
