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
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
