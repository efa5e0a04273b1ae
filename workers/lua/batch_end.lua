-- Count an ended job in its batch (the batch's slot; the job's own script noted it in
-- its shard's batch_ends, retain.lua, and workers.store drops the note after this).
-- Idempotent: the batch counts a set of ended jobs, so a count made again (a process that
-- died before dropping the note, the watchdog settling it) counts nothing twice.
-- The batch lives as long as the last of its jobs: its meta keeps the latest expiry of
-- its ended jobs ("" once one is kept forever); once every job has ended, the batch's
-- keys expire then.
-- KEYS: batch set, batch meta, the batch's ended set
-- ARGV: job id, the job's retention left in ms (0: kept forever), its expiry ("" : never)
-- Returns 1 when counted now, 0 when counted before or the batch is gone.
local set, meta, ended_set = KEYS[1], KEYS[2], KEYS[3]
if redis.call('EXISTS', meta) == 0 then
  return 0
end
-- The batch's declared size, not its set's: jobs join the set one by one while the
-- batch is submitted, and one that ends at once (an invalid spec) must not find itself
-- the last of a batch still being filled.
local size = tonumber(redis.call('HGET', meta, 'size') or '0')
if size == nil or size == 0 then
  return 0
end
if redis.call('SADD', ended_set, ARGV[1]) == 0 then
  return 0
end
local ms, expires_at = tonumber(ARGV[2]), ARGV[3]
local ended = redis.call('SCARD', ended_set)
redis.call('HSET', meta, 'ended', ended)
local latest = redis.call('HGET', meta, 'jobs_expire_at')
if latest ~= '' then
  if ms == 0 then
    latest = ''
  elseif latest == false or tonumber(latest) < tonumber(expires_at) then
    latest = expires_at
  end
  redis.call('HSET', meta, 'jobs_expire_at', latest)
end
if ended < size then
  return 1
end
redis.call('HSET', meta, 'expires_at', latest)
for _, key in ipairs(KEYS) do
  if latest == '' then
    redis.call('PERSIST', key)
  else
    redis.call('PEXPIRE', key, ms + math.ceil((tonumber(latest) - tonumber(expires_at)) * 1000))
  end
end
return 1
