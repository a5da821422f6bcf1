--[[
  Marks a run's hash with the archive revision that holds it — only while the hash still
  holds the run: a field written on dropped keys would create a hash with no TTL.

  Input:
    KEYS[1] run hash            rein:{runId}:run

    ARGV[1] when it was archived (ISO 8601)
    ARGV[2] the archived revision ("<version>.<events>")

  Output:
     1  marked
     0  the run's keys are gone; nothing written
]]
if redis.call('HEXISTS', KEYS[1], 'doc') == 1 then
  redis.call('HSET', KEYS[1], 'archivedAt', ARGV[1], 'archivedRevision', ARGV[2])
  return 1
end
return 0
