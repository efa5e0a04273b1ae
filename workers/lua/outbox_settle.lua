-- Settle an attempt at a job's callback, only while its claim is still ours: a deliverer
-- whose claim ran out (another took the entry over, and may have delivered it) changes
-- nothing. Its outcome goes into the job while the job is the one whose event it
-- delivered (never recreating a job whose retention ran out, never writing into a newer
-- job of the same id); its entry (outbox_claim.lua) is dropped or, to retry, due again
-- at a time; the claim is released.
-- KEYS: outbox zset, job hash, claim string
-- ARGV: job id, token, event id, outcome, retry at (Unix time; "": done, drop the entry)
-- Returns 1 when settled, 0 when the claim was not ours.
if redis.call('GET', KEYS[3]) ~= ARGV[2] then
  return 0
end
redis.call('DEL', KEYS[3])
local entry = ARGV[1] .. ':' .. ARGV[3]
local ours = redis.call('HGET', KEYS[2], 'callback_event') == ARGV[3]
if ARGV[5] ~= '' and ours then
  redis.call('ZADD', KEYS[1], 'XX', ARGV[5], entry)
else
  redis.call('ZREM', KEYS[1], entry)
end
if ours then
  redis.call('HSET', KEYS[2], 'callback', ARGV[4])
end
return 1
