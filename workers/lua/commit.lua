-- Commit one iteration exactly once: compare-and-set on the iteration number.
-- A duplicate or stale delivery finds another iteration number and changes nothing.
-- KEYS: job hash, output (a list of chunks), lease, commits hash, active zset, staging
--       list (the text stage.lua wrote for this commit; nothing when it was not staged),
--       the deployment's counters (Keys.metrics)
-- ARGV: job id, expected iteration, state json, append text, replace ("1"/"0"),
--       status, now, deadline ("" when the job is over), lease token,
--       summary json, result json (or ""), the staging list's mark when it is complete
--       ("" when nothing was staged: the text is ARGV[4]), the bytes staged, what this
--       step adds to the counters (json, "" for none), then retain's (retain.lua)
-- KEYS after the seven: retain's (the job's keys, its batch's)
-- Returns 1 committed, 0 stale, -1 no such job, -2 cancelled, -3 ended, -4 the staging
-- list is not as its parts left it (it expired before the commit); whatever the code,
-- no staging list is left.
local staged = ARGV[12] ~= '' and KEYS[6] or nil

-- Add a committed step to the counters: counted once, with the commit. `c` holds the
-- step's increments (integers, `cost` a float) and `seconds_le`, the histogram bucket
-- of its time (workers.iteration.step_counts).
local INTEGERS = {'input_tokens', 'output_tokens', 'merge_failures', 'fallbacks'}
local function count(metrics, raw)
  redis.call('HINCRBY', metrics, 'iterations', 1)
  if raw == '' then
    return
  end
  local c = cjson.decode(raw)
  for _, name in ipairs(INTEGERS) do
    local n = tonumber(c[name])
    if n and n ~= 0 then
      redis.call('HINCRBY', metrics, name, n)
    end
  end
  local cost = tonumber(c.cost)
  if cost and cost ~= 0 then
    redis.call('HINCRBYFLOAT', metrics, 'cost', cost)
  end
  local seconds = tonumber(c.seconds)
  if seconds and type(c.seconds_le) == 'string' then
    redis.call('HINCRBY', metrics, 'seconds_le:' .. c.seconds_le, 1)
    redis.call('HINCRBYFLOAT', metrics, 'seconds_sum', seconds)
  end
end

local function refuse(code)
  if staged then
    redis.call('DEL', staged)
  end
  return code
end

local current = redis.call('HGET', KEYS[1], 'iteration')
if current == false then
  return refuse(-1)
end
if tonumber(current) ~= tonumber(ARGV[2]) then
  return refuse(0)
end
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'cancelled' then
  return refuse(-2)
end
if status == 'succeeded' or status == 'partial' or status == 'failed' then
  -- The job ended while this iteration ran (failed by a poison message, a crash budget,
  -- an operator): a late commit never revives it.
  return refuse(-3)
end
if staged and staged_mark(staged) ~= ARGV[12] then
  return refuse(-4)
end
write_output(KEYS[1], KEYS[2], ARGV[4], ARGV[5] == '1', staged, ARGV[13]) -- output.lua
redis.call('HSET', KEYS[1], 'state', ARGV[3], 'iteration', tonumber(ARGV[2]) + 1,
  'status', ARGV[6], 'updated_at', ARGV[7], 'summary', ARGV[10])
if ARGV[11] ~= '' then
  redis.call('HSET', KEYS[1], 'result', ARGV[11])
end
redis.call('HINCRBY', KEYS[4], ARGV[2], 1)
if ARGV[8] == '' then
  redis.call('ZREM', KEYS[5], ARGV[1])
else
  redis.call('ZADD', KEYS[5], ARGV[8], ARGV[1])
end
if redis.call('GET', KEYS[3]) == ARGV[9] then
  redis.call('DEL', KEYS[3])
end
count(KEYS[7], ARGV[14])
job_event(8, 15, 'iteration', tonumber(ARGV[2]) + 1, 'status', ARGV[6], 'summary', ARGV[10])
if ends(ARGV[6]) then
  retain(8, 15)
end
return 1
