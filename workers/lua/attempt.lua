-- Start an attempt at one iteration: take the job's lease and charge the attempt to the
-- iteration's crash budget in the same write. An attempt that may pay for a model call is
-- therefore always counted, whatever happens next (its worker killed, Redis refusing
-- every later write); a deferral gives its charge back (``JobStore.refund_attempt``).
-- The first attempt at a new iteration drops the last one's crash record and kept step.
-- KEYS: lease, active zset, job hash
-- ARGV: token, ttl ms, job id, deadline, iteration
-- Returns the attempts at this iteration so far, this one included; 0 when another
-- worker holds the lease; -1 when the job is not at this iteration (gone, or moved on).
if redis.call('HGET', KEYS[3], 'iteration') ~= ARGV[5] then
  return -1
end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[2], 'XX', ARGV[4], ARGV[3])
if redis.call('HGET', KEYS[3], 'attempt_iteration') == ARGV[5] then
  return redis.call('HINCRBY', KEYS[3], 'attempts', 1)
end
redis.call('HSET', KEYS[3], 'attempt_iteration', ARGV[5], 'attempts', 1)
redis.call('HDEL', KEYS[3], 'attempt_error', 'kept_step')
return 1
