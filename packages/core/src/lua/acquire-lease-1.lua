--[[
  Takes a lease on a fleet-wide concurrency limit (a Redis semaphore whose leases expire,
  so a worker that dies holding one cannot leak it).

  Input:
    KEYS[1] leases sorted set   rein:limit:{<dependency>}   (member = lease id, score = expiry ms)

    ARGV[1] lease id
    ARGV[2] now (ms)
    ARGV[3] lease time-to-live (ms)
    ARGV[4] limit

  Output:
     1  leased
     0  the limit is reached
]]
-- Expired leases only matter at the limit: sweep them then, not on every call.
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
    return 0
  end
end
-- No key TTL: one small set per dependency, whose dead leases are swept at the limit.
redis.call('ZADD', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[3]), ARGV[1])
return 1
