-- Cancel a job that has not ended; it stops at its next iteration.
-- KEYS: job hash, active zset   ARGV: job id, now
local status = redis.call('HGET', KEYS[1], 'status')
if status == false then
  return -1
end
if status == 'succeeded' or status == 'partial' or status == 'failed' or status == 'cancelled' then
  return 0
end
redis.call('HSET', KEYS[1], 'status', 'cancelled', 'updated_at', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
