--[[
  Puts one item of a tenant's store unless the tenant holds as many as it may: replacing an
  item it holds is always allowed; the count and the write are one step, so concurrent puts
  cannot pass the limit together.

  Input:
    KEYS[1] the tenant's store     rein:tenant:{<tenant>}:store   (hash: item address -> item JSON)
    ARGV[1] the item's address
    ARGV[2] the item JSON
    ARGV[3] most items a tenant may hold

  Output:
     1  stored
     0  the tenant is at its limit; nothing written
]]
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
