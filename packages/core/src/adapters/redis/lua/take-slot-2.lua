--[[
  Fair share (`queueBeyondLimit`): hands a freed concurrency slot of a tenant to the run
  first in its waiting line, atomically, so two processes never hand out one slot twice.

  Input:
    KEYS[1] active runs set        rein:tenant:{tenant}:active
    KEYS[2] waiting runs list      rein:tenant:{tenant}:waiting  (oldest first)

    ARGV[1] max concurrent runs
    ARGV[2] a finished run whose slot is free ('' = none): removed from the active set first,
            as its commit's index writes will (they may land after this)

  Output:
    <runId>  admitted: popped from the line and added to the active set
    false    no slot free, or nobody waiting
]]
if ARGV[2] ~= '' then
  redis.call('SREM', KEYS[1], ARGV[2])
end
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return false
end
local head = redis.call('LPOP', KEYS[2])
if not head then
  return false
end
redis.call('SADD', KEYS[1], head)
return head
