--[[
  Admits a run under its tenant's quotas, atomically across the fleet.

  Input:
    KEYS[1] active runs set        rein:tenant:{tenant}:active
    KEYS[2] today's usage hash     rein:tenant:{tenant}:usage:<yyyy-mm-dd>  (tokens, costMicros)
    KEYS[3] parked runs set        rein:tenant:{tenant}:parked  (waiting for a person; not in KEYS[1])

    ARGV[1] run id
    ARGV[2] max concurrent runs
    ARGV[3] tokens per day
    ARGV[4] cost per day, in micro-dollars
    ARGV[5] max parked runs

  Output:
     1  admitted (run id added to the active set)
    -1  too many concurrent runs
    -2  daily token quota used up
    -3  daily cost quota used up
    -4  too many runs waiting for an approval
]]
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return -1
end
if redis.call('SCARD', KEYS[3]) >= tonumber(ARGV[5]) then
  return -4
end
local tokens = tonumber(redis.call('HGET', KEYS[2], 'tokens') or '0')
if tokens >= tonumber(ARGV[3]) then
  return -2
end
local cost = tonumber(redis.call('HGET', KEYS[2], 'costMicros') or '0')
if cost >= tonumber(ARGV[4]) then
  return -3
end
redis.call('SADD', KEYS[1], ARGV[1])
return 1
