--[[
  Compare-and-set commit of a run (I2): writes the new run document, an
  optional step record, appended messages, upserted approvals and events — all or
  nothing, and only if the run is still at the version the caller read.

  Input:
    KEYS[1] run hash            rein:{runId}:run
    KEYS[2] messages list       rein:{runId}:messages
    KEYS[3] steps hash          rein:{runId}:steps
    KEYS[4] approvals hash      rein:{runId}:approvals
    KEYS[5] events stream       rein:{runId}:events
    KEYS[6] decisions hash      rein:{runId}:decisions
    KEYS[7] effects hash        rein:{runId}:effects
    KEYS[8] snapshots hash      rein:{runId}:snapshots
    KEYS[9] snapshot texts      rein:{runId}:blobs

    ARGV[1] expected version
    ARGV[2] new run document (JSON, carrying expected version + 1)
    ARGV[3] step index ('' = no step record)
    ARGV[4] step record (JSON, or '')
    ARGV[5] TTL in seconds for the run's keys (0 = keep; set on terminal commits, which
                                mark the run hash `finished` and drop the effect ledger: no
                                step of the run can run again, nor write the ledger back)
    ARGV[6] number of messages M
    ARGV[7] number of approvals A
    ARGV[8] number of events E
    ARGV[9 .. 9+M-1]            messages (JSON)
    ARGV[9+M .. 9+M+2A-1]       approval id, approval JSON pairs
    ARGV[9+M+2A .. ]            events (JSON)

  Output:
     1  committed
     0  stale: the run is at another version (nothing written)
    -1  no such run
]]
local version = redis.call('HGET', KEYS[1], 'version')
if not version then
  return -1
end
if version ~= ARGV[1] then
  return 0
end

redis.call('HSET', KEYS[1], 'doc', ARGV[2], 'version', tostring(tonumber(ARGV[1]) + 1))
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
end

local m = tonumber(ARGV[6])
local a = tonumber(ARGV[7])
local e = tonumber(ARGV[8])
-- All of the step's messages in one RPUSH.
if m > 0 then
  redis.call('RPUSH', KEYS[2], unpack(ARGV, 9, 8 + m))
end
local i = 9 + m
for _ = 1, a do
  redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1])
  i = i + 2
end
for _ = 1, e do
  redis.call('XADD', KEYS[5], '*', 'e', ARGV[i])
  i = i + 1
end

local ttl = tonumber(ARGV[5])
if ttl > 0 then
  -- Marks the run finished for the effect ledger's writes (record-effect-2.lua).
  redis.call('HSET', KEYS[1], 'finished', '1')
  for k = 1, 9 do
    if k == 7 then
      redis.call('DEL', KEYS[k])
    else
      redis.call('EXPIRE', KEYS[k], ttl)
    end
  end
end
return 1
