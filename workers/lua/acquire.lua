-- Take a job's lease if nobody holds it, and move the job's overdue time to its expiry.
-- KEYS: lease, active zset   ARGV: token, ttl ms, job id, deadline
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('ZADD', KEYS[2], 'XX', ARGV[4], ARGV[3])
  return 1
end
return 0
