-- Join jobs to their batch and count its ended jobs (the batch's slot; each job's own
-- script noted its end in its shard's batch_ends, retain.lua, and workers.store drops the
-- note after this). One call takes a whole chunk of a batch's submission.
-- Idempotent: the batch's set and its count are sets, so a join or count made again (a
-- submission sent again, a process that died before dropping the note, the watchdog
-- settling it) adds nothing twice.
-- The batch lives as long as the last of its jobs: its meta keeps the latest expiry of
-- its ended jobs ("" once one is kept forever); once every job has ended, the batch's
-- keys expire then.
-- KEYS: batch set, batch meta, the batch's ended set
-- ARGV: n, then n job ids to join; then, per ended job: its id, its retention left in ms
-- (0: kept forever), its expiry ("": never)
-- Returns how many ended jobs were counted now (0: counted before, or the batch is gone).
local set, meta, ended_set = KEYS[1], KEYS[2], KEYS[3]
local n = tonumber(ARGV[1])
for i = 2, n + 1, 5000 do
  redis.call('SADD', set, unpack(ARGV, i, math.min(n + 1, i + 4999)))
end
if redis.call('EXISTS', meta) == 0 then
  return 0
end
-- The batch's declared size, not its set's: jobs join the set a chunk at a time while the
-- batch is submitted, and one that ends at once (an invalid spec) must not find itself
-- the last of a batch still being filled.
local size = tonumber(redis.call('HGET', meta, 'size') or '0')
if size == nil or size == 0 then
  return 0
end
local counted, ms, expires_at = 0, 0, ''
local latest = redis.call('HGET', meta, 'jobs_expire_at')
for i = n + 2, #ARGV, 3 do
  if redis.call('SADD', ended_set, ARGV[i]) == 1 then
    counted = counted + 1
    ms, expires_at = tonumber(ARGV[i + 1]), ARGV[i + 2]
    if latest ~= '' then
      if ms == 0 then
        latest = ''
      elseif latest == false or tonumber(latest) < tonumber(expires_at) then
        latest = expires_at
      end
    end
  end
end
if counted == 0 then
  return 0
end
local ended = redis.call('SCARD', ended_set)
redis.call('HSET', meta, 'ended', ended, 'jobs_expire_at', latest)
if ended < size then
  return counted
end
redis.call('HSET', meta, 'expires_at', latest)
for _, key in ipairs(KEYS) do
  if latest == '' then
    redis.call('PERSIST', key)
  else
    redis.call('PEXPIRE', key, ms + math.ceil((tonumber(latest) - tonumber(expires_at)) * 1000))
  end
end
return counted
