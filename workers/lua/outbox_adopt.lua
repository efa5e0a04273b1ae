-- Put a job that ended before the outbox existed (an upgrade: its callback pending or
-- retrying, with no event id) in the outbox, once, with a new event id.
-- KEYS: job hash, outbox   ARGV: job id, event id, due (Unix time)
-- Returns 1 when it was adopted now, 0 when the job is gone or has its event already.
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'callback_event') == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'callback_event', ARGV[2])
redis.call('ZADD', KEYS[2], 'NX', ARGV[3], ARGV[1] .. ':' .. ARGV[2])
return 1
