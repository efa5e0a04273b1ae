-- The output: prepended by workers.store to commit.lua and stage.lua, after a line
-- `local CHUNK = n` (CONTINUUM_OUTPUT_CHUNK_BYTES), so an iteration's text is written in
-- the same script as its state.
--
-- A job's output (Keys.output) is a Redis list of chunks, its text their concatenation.
-- A chunk holds at most CHUNK bytes and ends between two UTF-8 characters, so no value
-- grows with the job (Redis caps one string at proto-max-bulk-len, 512 MB). A commit
-- appends to the last chunk while it has room, then pushes new ones. The job hash keeps
-- `output_bytes` (the length, O(1)) and `output_gen` (how many times the output was
-- replaced: a reader in the middle of it stops, read_output.lua).
-- A text too large for one argument of a command (workers.store.STAGE_BYTES) reaches its
-- commit staged: already cut into chunks in a list of its own (stage.lua), which the
-- commit takes whole.
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

-- Append `text` to the list of chunks `out`: to its last chunk while it has room, then
-- in new ones.
local function append_chunks(out, text)
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
end

-- How far a staging list has got: its chunks and its last chunk's bytes ("0:0": none).
-- Each part staged changes it, so a list that expired, or a part sent twice, shows.
local function staged_mark(list)
  local last = redis.call('LINDEX', list, -1)
  return redis.call('LLEN', list) .. ':' .. (last and #last or 0)
end

-- Put the staged chunks after the output's: the list itself when there is no output yet
-- (a replacement: O(1)), else chunk by chunk (the last chunk before them stays as it
-- is). RENAME keeps the staging list's TTL, which the output must not have.
local function take_staged(out, staged)
  if redis.call('EXISTS', out) == 0 then
    redis.call('RENAME', staged, out)
    redis.call('PERSIST', out)
    return
  end
  while redis.call('LMOVE', staged, out, 'LEFT', 'RIGHT') do
  end
end

-- Write an iteration's output: `text`, or with `staged` the `staged_bytes` bytes of
-- chunks in that list (its text is then ''). Another type at `out` raises WRONGTYPE
-- before anything is written (LINDEX, LMOVE), unless it is replaced.
local function write_output(job, out, text, replace, staged, staged_bytes)
  if replace then
    redis.call('DEL', out)
    redis.call('HINCRBY', job, 'output_gen', 1)
    redis.call('HSET', job, 'output_bytes', 0)
  end
  if text == '' and not staged then
    return
  end
  if redis.call('TYPE', out)['ok'] == 'string' then
    local old = redis.call('GET', out)
    redis.call('DEL', out)
    redis.call('HSET', job, 'output_bytes', #old)
    push_chunks(out, old, 1)
  end
  if staged then
    take_staged(out, staged)
    redis.call('HINCRBY', job, 'output_bytes', staged_bytes)
    return
  end
  append_chunks(out, text)
  redis.call('HINCRBY', job, 'output_bytes', #text)
end
