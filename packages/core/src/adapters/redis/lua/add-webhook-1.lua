--[[
  Registers a webhook unless the tenant has as many as it may: the count and the write
  are one step, so concurrent creations cannot pass the limit together.

  Input:
    KEYS[1] the tenant's webhooks   rein:tenant:{tenantId}:webhooks (hash: id -> webhook JSON)
    ARGV[1] webhook id
    ARGV[2] webhook JSON
    ARGV[3] most webhooks a tenant may register

  Output:
     1  added
     0  the tenant is at its limit; nothing written
]]
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
