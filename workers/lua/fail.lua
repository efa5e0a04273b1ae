-- End a job as failed with a reason (a poison message, an unrecoverable error).
-- A job that has ended keeps its status and its first reason.
-- KEYS: job hash, active zset, then retain's   ARGV: job id, now, error, then retain's
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local status = redis.call('HGET', KEYS[1], 'status')
if ends(status) then
  return 0
end
redis.call('HSET', KEYS[1], 'status', 'failed', 'error', ARGV[3], 'updated_at', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
job_event(3, 4, 'status', 'failed', 'error', ARGV[3])
retain(3, 4)
return 1
