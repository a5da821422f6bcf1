--[[
  Claims a session's active-run marker for a run about to be created. The marker holds
  "<runId> <claimedAtMs>" (Redis time): the run's record lives in another slot, so a
  reader that finds no record for the holder can tell a claim still being created (busy)
  from one whose creator crashed (lapsed) only by the claim's age.

  Input:
    KEYS[1] session active marker   rein:tenant:{tenantId}:session:<userId>:<sessionId>:active
    ARGV[1] run id
    ARGV[2] marker TTL (seconds)
    ARGV[3] marker value the caller found finished or lapsed and may replace ('' = none)

  Output:
    { 1, <marker>, nowMs }  claimed: the marker was free, held by this run (renewed), or held exactly ARGV[3]
    { 0, <marker>, nowMs }  another claim holds the session; the caller judges it
]]
local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local held = redis.call('GET', KEYS[1])
local mine = held and (held == ARGV[1] or string.sub(held, 1, #ARGV[1] + 1) == ARGV[1] .. ' ')
if not held or mine or (ARGV[3] ~= '' and held == ARGV[3]) then
  local marker = ARGV[1] .. ' ' .. nowMs
  redis.call('SET', KEYS[1], marker, 'EX', ARGV[2])
  return { 1, marker, nowMs }
end
return { 0, held, nowMs }
