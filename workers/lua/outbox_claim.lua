-- Take the delivery of a job's callback: one deliverer at a time (the task sent when the
-- job ended, its retry, the watchdog's), each for a while (the claim's TTL, never past
-- the job's own expiry: a claim dies with its job); the entry's next attempt moves past
-- it, so the watchdog sends it again only if this one is lost.
-- An entry belongs to the job that wrote it: its member is "<job id>:<event id>", and
-- each job's end draws a new event id (callback_event). A job's id is free again once it
-- expired: the entry a new job of that id finds here is its own, never an older job's
-- (which no claim finds; the watchdog drops it).
-- KEYS: outbox zset, job hash, claim string
-- ARGV: job id, token, hold ms, now, early s (an attempt this early is taken)
-- Returns {the attempt's number (the job's callback_attempts, this one included), the
-- event id}; or {code, ""}: 0 when another deliverer holds it; -1 when the job has no
-- entry; -2 when it is not due yet; -3 when the job is gone (its retention ran out).

-- An entry written before entries named their event (an upgrade) holds the bare id: it
-- becomes the entry of the job's event while the job waits for its callback, and is
-- dropped otherwise (an older job's).
local function upgrade(event, entry)
  local due = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if not due then
    return
  end
  redis.call('ZREM', KEYS[1], ARGV[1])
  local state = redis.call('HGET', KEYS[2], 'callback') or ''
  if event and (state == 'pending' or string.sub(state, 1, 9) == 'retrying:') then
    redis.call('ZADD', KEYS[1], 'NX', due, entry)
  end
end

local event = redis.call('HGET', KEYS[2], 'callback_event')
local entry = ARGV[1] .. ':' .. (event or '')
upgrade(event, entry)
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {-3, ''}
end
local due = event and redis.call('ZSCORE', KEYS[1], entry)
if not due then
  return {-1, ''}
end
local now = tonumber(ARGV[4])
if tonumber(due) > now + tonumber(ARGV[5]) then
  return {-2, ''}
end
local hold = tonumber(ARGV[3])
local left = redis.call('PTTL', KEYS[2])
if left > 0 and left < hold then
  hold = left
end
if not redis.call('SET', KEYS[3], ARGV[2], 'NX', 'PX', hold) then
  return {0, ''}
end
redis.call('ZADD', KEYS[1], 'XX', now + hold / 1000, entry)
return {redis.call('HINCRBY', KEYS[2], 'callback_attempts', 1), event}
