--[[
  Replaces a document only if it is still the one the caller read (a compare-and-set on
  the whole value): a run's saga compensation, replaced for its next round.

  Input:
    KEYS[1] the document        rein:{runId}:compensation

    ARGV[1] the value the caller read
    ARGV[2] the new value
    ARGV[3] TTL of the new value, in seconds

  Output:
     1  replaced
     0  the key holds something else now; nothing written
]]
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
  return 1
end
return 0
