--[[
  Frees a session's active-run marker, only if the given run still holds it (a later
  run may have taken over a marker whose release was lost).

  Input:
    KEYS[1] session active marker   rein:tenant:{tenantId}:session:<userId>:<sessionId>:active
    ARGV[1] run id

  Output:
     1  released
     0  another run (or none) holds the session
]]
local held = redis.call('GET', KEYS[1])
-- "<runId> <claimedAtMs>" (claim-session-1.lua); a bare run id is a marker from before claims carried their time.
if held and (held == ARGV[1] or string.sub(held, 1, #ARGV[1] + 1) == ARGV[1] .. ' ') then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
