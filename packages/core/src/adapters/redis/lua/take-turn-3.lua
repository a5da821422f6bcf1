--[[
  Fair share across tenants (`fairShareSlots`): hands one free fleet-wide slot to the
  oldest waiting run of the tenant whose turn it is (the ring's head), then moves that
  tenant to the ring's tail, its line empty or not (it leaves the ring when its next turn
  finds nobody). Atomic in one slot, so two processes never hand out one slot twice;
  the caller names the head it read and retries when another process took that turn first.

  Input:
    KEYS[1] runs holding a slot       rein:fair:{fair}:slots
    KEYS[2] ring of waiting tenants   rein:fair:{fair}:ring      (next turn first)
    KEYS[3] the head tenant's line    rein:fair:{fair}:line:<tenant>

    ARGV[1] the head tenant, as the caller read it
    ARGV[2] fleet-wide slots

  Output:
    <runId>  the run now holding a slot
    -1       the ring's head is another tenant now (read it again)
    -2       every slot is taken
    -3       the tenant's line was empty: it left the ring (try the next)
]]
if redis.call('LINDEX', KEYS[2], 0) ~= ARGV[1] then
  return -1
end
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return -2
end
local run = redis.call('LPOP', KEYS[3])
if not run then
  redis.call('LPOP', KEYS[2])
  return -3
end
redis.call('SADD', KEYS[1], run)
-- To the tail even with its line empty: a tenant that runs one at a time and is back in
-- line by the next turn must not rejoin at the head (enter-fair-share-2.lua) ahead of the
-- tenants still waiting. It leaves the ring when it reaches the head with nobody (-3).
redis.call('LMOVE', KEYS[2], KEYS[2], 'LEFT', 'RIGHT')
return run
