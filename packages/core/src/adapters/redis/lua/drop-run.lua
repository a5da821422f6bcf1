--[[
  Drops every key of an archived run (one slot), only if nothing changed since the archive
  confirmed it: the run's last event is still the one the archived revision ends with.

  Input:
    KEYS[1]    events stream     rein:{runId}:events
    KEYS[2 ..] the run's other keys

    ARGV[1] the archived revision's last event id ('' when it had none)

  Output:
     1  dropped
     0  an event landed since; nothing dropped
]]
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
if (last and last[1] or '') ~= ARGV[1] then
  return 0
end
redis.call('DEL', unpack(KEYS))
return 1
