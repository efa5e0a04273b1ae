-- A guard put between retain.lua and fail.lua by workers.store (JobStore.fail_attempt)
-- for the attempts that fail a job for its crash budget: the job fails only while it is
-- still at the iteration those attempts were counted for (the last ARGV). An attempt's
-- lease can run out while it is paused, and its late commit then moves the job on: the
-- job at the next iteration is not the budget's to fail.
-- Returns -2 (nothing changed) when the job is at another iteration, or gone.
if redis.call('HGET', KEYS[1], 'iteration') ~= ARGV[#ARGV] then
  return -2
end
