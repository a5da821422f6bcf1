--[[
  Puts one A2A push-notification config of a task unless the task holds as many as it may:
  replacing a config (the same caller, the same id) is always allowed; the count and the
  write are one step, so concurrent creations cannot pass the limit together. The configs
  live as long as the run's trace, counted from the latest write.

  Input:
    KEYS[1] the task's configs   rein:{<runId>}:a2a-push   (hash: <userId>:<configId> -> config JSON)
    ARGV[1] the config's field   <userId>:<configId>
    ARGV[2] the config JSON
    ARGV[3] most configs a task may hold
    ARGV[4] time to live (s)

  Output:
     1  stored
     0  the task is at its limit; nothing written
]]
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1
