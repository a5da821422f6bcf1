--[[
  Fair share across tenants (`fairShareSlots`): a run its tenant admitted joins the
  tenant's line for a fleet-wide slot. A tenant not in the ring joins it at its head: it
  gets the next freed slot, so a flood never stands ahead of a newcomer. One still in the
  ring (its last turn left its line empty: take-turn-3.lua keeps it at the tail) stays
  where it is, so it never jumps ahead of the tenants waiting since.

  Input:
    KEYS[1] ring of waiting tenants   rein:fair:{fair}:ring      (next turn first)
    KEYS[2] the tenant's line         rein:fair:{fair}:line:<tenant>  (oldest first)

    ARGV[1] tenant id
    ARGV[2] run id

  Output:
    the tenant's line length after the run joined
]]
local n = redis.call('RPUSH', KEYS[2], ARGV[2])
if not redis.call('LPOS', KEYS[1], ARGV[1]) then
  redis.call('LPUSH', KEYS[1], ARGV[1])
end
return n
