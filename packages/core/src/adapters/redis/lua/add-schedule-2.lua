--[[
  Stores a new schedule unless its tenant holds as many as it may: the count and the
  writes are one step, so concurrent creations cannot pass the limit together. Both keys
  share the `{schedules}` hash tag.

  Input:
    KEYS[1] every schedule           rein:{schedules}:all              (hash: id -> record JSON)
    KEYS[2] the tenant's schedules   rein:{schedules}:tenant:<tenant>  (set of ids)
    ARGV[1] schedule id
    ARGV[2] schedule record JSON
    ARGV[3] most schedules a tenant may hold

  Output:
     1  added
     0  the tenant is at its limit; nothing written
]]
if redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
