--[[
  Creates a run record with its first messages and event, once.

  Input:
    KEYS[1] run hash            rein:{runId}:run
    KEYS[2] messages list       rein:{runId}:messages
    KEYS[3] events stream       rein:{runId}:events

    ARGV[1] run document (JSON, version 0)
    ARGV[2] event (JSON)
    ARGV[3 ..] first messages (JSON): a session's earlier turns, then the run's input

  Output:
     1  created
     0  a run with this id already exists (nothing written)

  Events:
    XADD KEYS[3] e=<ARGV[2]>
]]
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'doc', ARGV[1], 'version', '0')
for i = 3, #ARGV do
  redis.call('RPUSH', KEYS[2], ARGV[i])
end
redis.call('XADD', KEYS[3], '*', 'e', ARGV[2])
return 1
