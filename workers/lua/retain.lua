-- Retention: prepended by workers.store to every script that ends a job (commit, fail,
-- cancel), so a job's keys get their expiry in the same script as its final write, and
-- its callback (if it asked for one) its outbox entry.
--
-- retain(k, a): KEYS[k], KEYS[k+1], ... are the job's keys (Keys.job_keys: its hash
-- first, ARGV[a+2] of them), then its shard's outbox and batch_ends (all one slot). ARGV[a] is the retention in ms (0: keep forever), ARGV[a+1] the job's expiry
-- (Unix time, what `expires_at` says; "" when kept forever), ARGV[a+3] the time it ends
-- (its callback is due then), ARGV[a+4] the id of this ending's callback event,
-- ARGV[a+5] the job id.
local function ends(status)
  return status == 'succeeded' or status == 'partial' or status == 'failed'
    or status == 'cancelled'
end

-- The job's callback goes into the outbox with its end, atomically: whatever happens to
-- the worker after this script, the callback is delivered (workers.callbacks). Its entry
-- is "<job id>:<event id>": this job's own, never taken for a later job of the same id
-- (outbox_claim.lua). A job kept only to say its submission was invalid (state "{}",
-- workers.submit.record_invalid) is never called back: its callback_url was never
-- validated.
local function call_back(job, outbox, a)
  if redis.call('HGET', job, 'state') == '{}' then
    return
  end
  local ok, spec = pcall(cjson.decode, redis.call('HGET', job, 'spec') or '')
  if not ok or type(spec) ~= 'table' or type(spec.callback_url) ~= 'string'
      or spec.callback_url == '' then
    return
  end
  redis.call('HSET', job, 'callback', 'pending', 'callback_event', ARGV[a + 4],
    'callback_attempts', 0)
  redis.call('ZADD', outbox, ARGV[a + 3], ARGV[a + 5] .. ':' .. ARGV[a + 4])
end

-- Entries an event stream keeps (the newest; a reader resuming from an older id gets
-- the oldest kept one next).
local EVENTS_KEPT = 1000

-- Add an event (field, value, ...) to the job's stream, the last of its keys KEYS[k], ...
-- (ARGV[a + 2] of them): every commit and every end writes one, in its own script, so a
-- reader of the stream misses none and sees them in order.
local function job_event(k, a, ...)
  local stream = KEYS[k + tonumber(ARGV[a + 2]) - 1]
  redis.call('XADD', stream, 'MAXLEN', '~', EVENTS_KEPT, '*', ...)
end

local function retain(k, a)
  local ms = tonumber(ARGV[a])
  local expires_at = ARGV[a + 1]
  local njob = tonumber(ARGV[a + 2])
  call_back(KEYS[k], KEYS[k + njob], a)
  if ms > 0 then
    redis.call('HSET', KEYS[k], 'expires_at', expires_at)
    for i = k, k + njob - 1 do
      -- -2: no such key (no output yet). A shorter TTL (a lease) is never lengthened.
      local ttl = redis.call('PTTL', KEYS[i])
      if ttl == -1 or ttl > ms then
        redis.call('PEXPIRE', KEYS[i], ms)
      end
    end
  end
  -- A job of a batch is noted in its shard's batch_ends, for its batch (another slot)
  -- to count next (batch_end.lua); the note stays until the batch has.
  if (redis.call('HGET', KEYS[k], 'batch') or '') ~= '' then
    redis.call('ZADD', KEYS[k + njob + 1], ARGV[a + 3], ARGV[a + 5])
  end
end
