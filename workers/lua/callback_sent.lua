-- Claim the sending of a job's callback task: true for the first caller only (the watchdog
-- sends the task again if it is lost). An expired job is not recreated.
-- KEYS: job hash
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('HSETNX', KEYS[1], 'callback_sent', '1')
end
return 0
