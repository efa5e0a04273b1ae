-- Settle an attempt at a job's callback: its outcome in the job (never recreating a job
-- whose retention ran out), its outbox entry dropped or, to retry, due again at a time;
-- the claim released if it is still ours.
-- KEYS: outbox zset, job hash, claim string
-- ARGV: job id, token, outcome, retry at (Unix time; "": done, drop the entry)
if ARGV[4] ~= '' and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('ZADD', KEYS[1], 'XX', ARGV[4], ARGV[1])
else
  redis.call('ZREM', KEYS[1], ARGV[1])
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HSET', KEYS[2], 'callback', ARGV[3])
end
if redis.call('GET', KEYS[3]) == ARGV[2] then
  redis.call('DEL', KEYS[3])
end
return 1
