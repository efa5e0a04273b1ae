-- Read a job and start an attempt at one of its iterations in one call
-- (JobStore.load_and_start): attempt.lua's function (put before this by workers.store)
-- runs only for a job that exists, has not ended and is at that iteration.
-- KEYS, ARGV: attempt.lua's
-- Returns {code, the job's hash as HGETALL gives it}: code is attempt.lua's (-1 also for a
-- job that has ended), or -2 when there is no job.
local status = redis.call('HGET', KEYS[3], 'status')
if not status then
  return {-2, {}}
end
local code = -1
if status ~= 'succeeded' and status ~= 'partial' and status ~= 'failed'
    and status ~= 'cancelled' then
  code = attempt()
end
return {code, redis.call('HGETALL', KEYS[3])}
