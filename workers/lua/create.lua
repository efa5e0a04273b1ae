-- Create a job once: a second call with the same id changes nothing (idempotent submit).
-- KEYS: job hash, its shard's active zset and jobs index (created_at by id)
-- ARGV: job id, spec json, state json, now, deadline, batch id (or "")
-- Returns {created (1 or 0), batch, status, expires_at} of the job now (the existing one's
-- when it existed): its batch (another slot) joins it and counts it next (batch_end.lua).
local existing = existing_job(KEYS[1])
if existing then
  return existing
end
redis.call('HSET', KEYS[1],
  'spec', ARGV[2], 'state', ARGV[3], 'status', 'queued', 'iteration', 0,
  'created_at', ARGV[4], 'updated_at', ARGV[4], 'batch', ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
return {1, ARGV[6], 'queued', ''}
