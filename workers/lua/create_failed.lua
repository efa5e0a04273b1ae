-- Keep an invalid submission as a job created failed, in one write: the error says what
-- is wrong with it (workers.submit); its state is "{}" (no callback, retain.lua). A job
-- that exists keeps everything: a valid job holding this id is never failed.
-- KEYS: job hash, its shard's jobs index, then retain's
-- ARGV: job id, the submission as sent (JSON), now, batch id (or ""), error, then retain's
-- Returns {created (1 or 0), batch, status, expires_at}, as create.lua does.
local existing = existing_job(KEYS[1])
if existing then
  return existing
end
redis.call('HSET', KEYS[1],
  'spec', ARGV[2], 'state', '{}', 'status', 'failed', 'iteration', 0, 'error', ARGV[5],
  'created_at', ARGV[3], 'updated_at', ARGV[3], 'batch', ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
job_event(3, 6, 'status', 'failed', 'error', ARGV[5])
retain(3, 6)
return {1, ARGV[4], 'failed', redis.call('HGET', KEYS[1], 'expires_at') or ''}
