-- Extend a lease only if it is still ours; move the job's overdue time with it.
-- KEYS: lease, active zset   ARGV: token, ttl ms, job id, deadline
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], 'XX', ARGV[4], ARGV[3])
return 1
