--[[
  Admits a cohort replay unless its tenant runs as many as it may: the count and the
  admission are one step, so cohorts created at once cannot pass the limit together.
  A cohort that has shown no progress for too long (its process lost it) stops counting.

  Input:
    KEYS[1] the tenant's open cohorts   rein:tenant:{tenantId}:replays:open (sorted set: cohort id -> last progress, ms)
    ARGV[1] cohort id
    ARGV[2] now, ms
    ARGV[3] progress older than this (ms) is stale
    ARGV[4] most cohorts a tenant may run at once

  Output:
     1  admitted
     0  the tenant is at its limit; nothing written
]]
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
