--[[
  Charges a run's usage to its tenant, idempotently: the run's own record holds what it
  spent so far (committed with each step, in the run's slot); this adds to today's
  tenant usage only what no earlier charge of that run added. Replaying a charge, or
  charging an older total after a newer one, adds nothing; a charge lost in a crash is
  made up by the run's next one (or by the reaper once the run is finished).

  Input:
    KEYS[1] today's usage hash        rein:tenant:{tenant}:usage:<yyyy-mm-dd>   (tokens, costMicros)
    KEYS[2] today's charged marks     rein:tenant:{tenant}:charged:<yyyy-mm-dd> (run id -> "tokens:costMicros")
    KEYS[3] yesterday's charged marks (a run that spans midnight was charged there)

    ARGV[1] run id
    ARGV[2] the run's total tokens
    ARGV[3] the run's total cost, in micro-dollars
    ARGV[4] TTL of both of today's keys, in seconds ('0': the caller set it already today)
    ARGV[5] '1' if the run began before today (only then can yesterday hold its mark)

  Output: the tokens added by this call
]]
local function parse(mark)
  if not mark then return 0, 0 end
  local t, c = string.match(mark, '^(%d+):(%d+)$')
  return tonumber(t) or 0, tonumber(c) or 0
end
local t1, c1 = parse(redis.call('HGET', KEYS[2], ARGV[1]))
local t2, c2 = 0, 0
if ARGV[5] == '1' then
  t2, c2 = parse(redis.call('HGET', KEYS[3], ARGV[1]))
end
local chargedTokens, chargedCost = math.max(t1, t2), math.max(c1, c2)
local tokens, cost = tonumber(ARGV[2]), tonumber(ARGV[3])
local addTokens, addCost = math.max(0, tokens - chargedTokens), math.max(0, cost - chargedCost)
if addTokens == 0 and addCost == 0 then
  return 0
end
-- Nothing to add is not written (a model without a price costs 0).
if addTokens > 0 then
  redis.call('HINCRBY', KEYS[1], 'tokens', addTokens)
end
if addCost > 0 then
  redis.call('HINCRBY', KEYS[1], 'costMicros', addCost)
end
redis.call('HSET', KEYS[2], ARGV[1], math.max(tokens, chargedTokens) .. ':' .. math.max(cost, chargedCost))
if ARGV[4] ~= '0' then
  redis.call('EXPIRE', KEYS[1], ARGV[4])
  redis.call('EXPIRE', KEYS[2], ARGV[4])
end
return addTokens
