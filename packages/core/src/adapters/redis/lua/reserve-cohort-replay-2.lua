--[[
  Reserves one cohort replay's token limit and a slot before the replay starts: the check
  and the reservation are one step, so replays starting at once cannot pass the cohort's
  budget or its concurrency together.

  Input:
    KEYS[1] the cohort's tokens     rein:tenant:{tenantId}:replays:<id>:tokens (spent by finished replays + held by running ones)
    KEYS[2] the cohort's running    rein:tenant:{tenantId}:replays:<id>:running (replays started, not finished)
    ARGV[1] the cohort's maxTokens
    ARGV[2] tokens to hold: the replay's own token limit
    ARGV[3] the cohort's concurrency
    ARGV[4] TTL of both keys, seconds

  Output:
     1  reserved: tokens held, a slot taken
     0  every slot is taken; nothing written
    -1  the limit does not fit now, but running replays will give back what they did not spend
    -2  the limit does not fit and no replay is running: it never will
]]
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local running = tonumber(redis.call('GET', KEYS[2]) or '0')
if running >= tonumber(ARGV[3]) then
  return 0
end
if used + tonumber(ARGV[2]) > tonumber(ARGV[1]) then
  if running > 0 then
    return -1
  end
  return -2
end
redis.call('INCRBY', KEYS[1], ARGV[2])
redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1
