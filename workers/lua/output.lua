-- The output: prepended by workers.store to commit.lua, after a line `local CHUNK = n`
-- (CONTINUUM_OUTPUT_CHUNK_BYTES), so an iteration's text is written in the same script
-- as its state.
--
-- A job's output (Keys.output) is a Redis list of chunks, its text their concatenation.
-- A chunk holds at most CHUNK bytes and ends between two UTF-8 characters, so no value
-- grows with the job (Redis caps one string at proto-max-bulk-len, 512 MB). A commit
-- appends to the last chunk while it has room, then pushes new ones. The job hash keeps
-- `output_bytes` (the length, O(1)) and `output_gen` (how many times the output was
-- replaced: a reader in the middle of it stops, read_output.lua).
-- A string at that key is the layout before chunks (one string, appended): the first
-- commit after an upgrade cuts it into chunks; readers take both.

-- The last byte of the piece of `text` from byte i holding at most n bytes and ending
-- between two characters (i - 1: not one character fits).
local function cut(text, i, n)
  local j = i + n - 1
  if j >= #text then
    return #text
  end
  while j >= i do
    local b = string.byte(text, j + 1)
    if b < 128 or b >= 192 then -- byte j + 1 starts a character
      return j
    end
    j = j - 1
  end
  return j
end

local function push_chunks(out, text, i)
  while i <= #text do
    local j = cut(text, i, CHUNK)
    if j < i then -- not UTF-8 (CHUNK holds any character): cut by bytes
      j = i + CHUNK - 1
    end
    redis.call('RPUSH', out, string.sub(text, i, j))
    i = j + 1
  end
end

local function write_output(job, out, text, replace)
  if replace then
    redis.call('DEL', out)
    redis.call('HINCRBY', job, 'output_gen', 1)
    redis.call('HSET', job, 'output_bytes', 0)
  end
  if text == '' then
    return
  end
  if redis.call('TYPE', out)['ok'] == 'string' then
    local old = redis.call('GET', out)
    redis.call('DEL', out)
    redis.call('HSET', job, 'output_bytes', #old)
    push_chunks(out, old, 1)
  end
  -- Another type raises WRONGTYPE here, before anything is written.
  local last = redis.call('LINDEX', out, -1)
  local i = 1
  if last and #last < CHUNK then
    local j = cut(text, 1, CHUNK - #last)
    if j >= 1 then
      redis.call('LSET', out, -1, last .. string.sub(text, 1, j))
      i = j + 1
    end
  end
  push_chunks(out, text, i)
  redis.call('HINCRBY', job, 'output_bytes', #text)
end
