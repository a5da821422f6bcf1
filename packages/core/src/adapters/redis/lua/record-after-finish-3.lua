--[[
  Records a step whose calls ran (or may have run) while its run was being finished: the
  worker's own commit was stale, as the run's terminal commit came first. Written only if
  the run is finished and the step has no record, so a step committed the normal way is
  never overwritten; the keys keep the TTL the terminal commit gave them.

  Input:
    KEYS[1] run hash            rein:{runId}:run
    KEYS[2] steps hash          rein:{runId}:steps
    KEYS[3] events stream       rein:{runId}:events

    ARGV[1] step index
    ARGV[2] step record (JSON)
    ARGV[3] event (JSON)

  Output:
    1  recorded
    0  not recorded: the run is live, or the step has a record
]]
if redis.call('HEXISTS', KEYS[1], 'finished') == 0 then
  return 0
end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then
  return 0
end
redis.call('XADD', KEYS[3], '*', 'e', ARGV[3])
return 1
