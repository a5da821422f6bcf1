--[[
  Counts a cohort replay's finish once (a finish hook may run again): what it held is
  replaced by what it spent, and its slot is freed.

  Input:
    KEYS[1] the cohort's finished   rein:tenant:{tenantId}:replays:<id>:finished (set of replay ids)
    KEYS[2] the cohort's held       rein:tenant:{tenantId}:replays:<id>:held (hash: replay id -> tokens held)
    KEYS[3] the cohort's tokens     rein:tenant:{tenantId}:replays:<id>:tokens
    KEYS[4] the cohort's running    rein:tenant:{tenantId}:replays:<id>:running
    ARGV[1] replay id
    ARGV[2] tokens the replay spent
    ARGV[3] TTL, seconds

  Output:
     1  counted
     0  counted before; nothing written
]]
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then
  return 0
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
local held = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
redis.call('INCRBY', KEYS[3], tonumber(ARGV[2]) - held)
redis.call('EXPIRE', KEYS[3], ARGV[3])
if tonumber(redis.call('GET', KEYS[4]) or '0') > 0 then
  redis.call('DECR', KEYS[4])
end
return 1
