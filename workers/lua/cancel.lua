-- Cancel a job that has not ended; it stops at its next iteration.
-- KEYS: job hash, active zset, then retain's   ARGV: job id, now, then retain's
local status = redis.call('HGET', KEYS[1], 'status')
if status == false then
  return -1
end
if ends(status) then
  return 0
end
redis.call('HSET', KEYS[1], 'status', 'cancelled', 'updated_at', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
job_event(3, 3, 'status', 'cancelled')
retain(3, 3)
return 1
