--[[
  Takes a lease on a fleet-wide concurrency limit (a Redis semaphore whose leases expire,
  so a worker that dies holding one cannot leak it), and reads the dependency's shared
  circuit-breaker state in the same call: both guard the same call, and both live in the
  dependency's hash slot.

  Input:
    KEYS[1] leases sorted set   rein:limit:{<dependency>}   (member = lease id, score = expiry ms)
    KEYS[2] breaker open flag   rein:breaker:{<dependency>}:open
    KEYS[3] breaker tripped     rein:breaker:{<dependency>}:tripped

    ARGV[1] lease id
    ARGV[2] now (ms)
    ARGV[3] lease time-to-live (ms)
    ARGV[4] limit

  Output: { 1 leased | 0 the limit is reached, open flag or false, tripped or false }
]]
local state = redis.call('MGET', KEYS[2], KEYS[3])
-- Expired leases only matter at the limit: sweep them then, not on every call.
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
    return { 0, state[1], state[2] }
  end
end
-- No key TTL: one small set per dependency, whose dead leases are swept at the limit.
redis.call('ZADD', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[3]), ARGV[1])
return { 1, state[1], state[2] }
