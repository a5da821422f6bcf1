--[[
  Writes one entry of a run's effect ledger (I4) — for a step's calls only while the run
  is live: once its terminal commit has dropped the ledger, a late worker must neither
  recreate it nor start an effect (the caller records what it did in the trace instead).

  Input:
    KEYS[1] run hash            rein:{runId}:run
    KEYS[2] effects hash        rein:{runId}:effects

    ARGV[1] 'intent' (only if nothing is recorded) or 'result' (overwrites)
    ARGV[2] the entry's key (an idempotency key)
    ARGV[3] the entry (JSON)
    ARGV[4] TTL in seconds of the ledger
    ARGV[5] '1' = only while the run is live (a step's call), '0' = always (an undo of a finished run)

  Output:
     {1}            written
     {0, entry}     an intent not written: this entry was there
    {-1}            not written: the run is finished (or gone)
]]
if ARGV[5] == '1' and (redis.call('HEXISTS', KEYS[1], 'version') == 0 or redis.call('HEXISTS', KEYS[1], 'finished') == 1) then
  return {-1}
end
if ARGV[1] == 'intent' then
  if redis.call('HSETNX', KEYS[2], ARGV[2], ARGV[3]) == 0 then
    return {0, redis.call('HGET', KEYS[2], ARGV[2])}
  end
else
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
end
redis.call('EXPIRE', KEYS[2], ARGV[4])
return {1}
