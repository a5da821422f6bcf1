--[[
  Appends one entry to a tenant's decision log (a hash chain) if the chain's head is still
  the one the entry was built on: the check and the three writes are one step, so two
  writers can never both take the same `seq` or fork the chain. The caller builds the
  entry (its sha256 is computed in Node: Redis's Lua has no sha256) and retries on 0.

  Input:
    KEYS[1] the entries      rein:tenant:{tenantId}:audit      (hash: seq -> entry JSON)
    KEYS[2] the time index   rein:tenant:{tenantId}:audit:at   (sorted set: seq scored by its at, ms)
    KEYS[3] the head         rein:tenant:{tenantId}:audit:head ("<seq> <hash> <at ms>"; absent: empty log)
    ARGV[1] the entry's seq (the head's + 1)
    ARGV[2] the entry's prevHash (the head's hash)
    ARGV[3] the entry JSON
    ARGV[4] the entry's hash
    ARGV[5] the entry's at (ms)

  Output:
     1  appended
     0  the head moved (another entry came first); nothing written
]]
local head = redis.call('GET', KEYS[3])
local seq, hash = 0, string.rep('0', 64)
if head then
  local s, h = string.match(head, '^(%d+) (%x+)')
  seq, hash = tonumber(s), h
end
if seq + 1 ~= tonumber(ARGV[1]) or hash ~= ARGV[2] then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
redis.call('SET', KEYS[3], ARGV[1] .. ' ' .. ARGV[4] .. ' ' .. ARGV[5])
return 1
