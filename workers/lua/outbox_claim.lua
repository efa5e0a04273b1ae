-- Take the delivery of a job's callback: one deliverer at a time (the task sent when the
-- job ended, its retry, the watchdog's), each for a while (the claim's TTL); the entry's
-- next attempt moves past it, so the watchdog sends it again only if this one is lost.
-- KEYS: outbox zset, job hash, claim string
-- ARGV: job id, token, hold ms, now, early s (an attempt this early is taken)
-- Returns the attempt's number (the job's callback_attempts, this one included); 0 when
-- another deliverer holds it; -1 when it is not in the outbox; -2 when it is not due yet;
-- -3 when the job is gone (its retention ran out): the entry is dropped.
local due = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not due then
  return -1
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return -3
end
local now = tonumber(ARGV[4])
if tonumber(due) > now + tonumber(ARGV[5]) then
  return -2
end
if not redis.call('SET', KEYS[3], ARGV[2], 'NX', 'PX', ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[3]) / 1000, ARGV[1])
return redis.call('HINCRBY', KEYS[2], 'callback_attempts', 1)
