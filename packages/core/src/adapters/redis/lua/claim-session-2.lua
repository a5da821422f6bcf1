--[[
  Claims a session's active-run marker for a run about to be created. The marker holds
  "<runId> <claimedAtMs>" (Redis time): the run's record lives in another slot, so a
  reader that finds no record for the holder can tell a claim still being created (busy)
  from one whose creator crashed (lapsed) only by the claim's age.

  Runs waiting for the session (`ifBusy`) go first, in their order: while the queue is not
  empty only its head may claim.

  Input:
    KEYS[1] session active marker   rein:tenant:{tenantId}:session:<userId>:<sessionId>:active
    KEYS[2] session queue (list)    rein:tenant:{tenantId}:session:<userId>:<sessionId>:queue
    ARGV[1] run id
    ARGV[2] marker TTL (seconds)
    ARGV[3] marker value the caller found finished or lapsed and may replace ('' = none)

  Output:
    { 1, <marker>, nowMs }  claimed: the marker was free, held by this run (renewed), or held exactly ARGV[3]
    { 0, <marker>, nowMs }  another claim holds the session; the caller judges it
    { 2, <runId>, nowMs }   runs are queued for the session and <runId>, their head, is not this one
]]
local now = redis.call('TIME')
local nowMs = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
local head = redis.call('LINDEX', KEYS[2], 0)
if head and head ~= ARGV[1] then
  return { 2, head, nowMs }
end
local held = redis.call('GET', KEYS[1])
local mine = held and (held == ARGV[1] or string.sub(held, 1, #ARGV[1] + 1) == ARGV[1] .. ' ')
if not held or mine or (ARGV[3] ~= '' and held == ARGV[3]) then
  local marker = ARGV[1] .. ' ' .. nowMs
  redis.call('SET', KEYS[1], marker, 'EX', ARGV[2])
  return { 1, marker, nowMs }
end
return { 0, held, nowMs }
