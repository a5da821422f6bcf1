--[[
  Settles an Idempotency-Key claim, only if the key still holds that very claim: binds
  it to the run that was created (a new value and TTL), or releases it (delete) when
  the run was not created.

  Input:
    KEYS[1] idempotency key     rein:tenant:{tenant}:idempotency:<user>:<key>

    ARGV[1] the claim, exactly as written (JSON)
    ARGV[2] the new value (JSON), or '' to release the key
    ARGV[3] TTL of the new value, in seconds

  Output:
     1  settled
     0  the key holds something else (the claim expired); nothing written
]]
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3]))
end
return 1
