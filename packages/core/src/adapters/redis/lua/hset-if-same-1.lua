--[[
  Replaces one field of a hash only if it still holds the value the caller read: a store
  item's TTL refresh, which must neither bring back an item deleted since nor undo a newer put.

  Input:
    KEYS[1] the hash            rein:tenant:{<tenant>}:store

    ARGV[1] the field
    ARGV[2] the value the caller read
    ARGV[3] the new value

  Output:
     1  replaced
     0  the field holds something else now (or nothing); nothing written
]]
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0
