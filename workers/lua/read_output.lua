-- Read a job's output from a cursor (workers.store.JobStore.iter_output; the layout is
-- in output.lua). The cursor is a chunk index and a byte offset in it: the text only
-- grows at its end, so it stays valid while commits append (a full last chunk then
-- spans the next ones: the offset walks on), and an offset in the old single string
-- is the same offset in the chunks it is cut into.
-- A read takes as many chunks as its bytes span, in windows of chunks (LRANGE: one walk
-- to each window, not one per chunk). The first window is one chunk; each next one as
-- many as the bytes still wanted fill at the largest chunk seen so far, at most twice
-- the one before and at most WINDOW: where chunks grow (the chunk size was raised
-- between commits), a read fetches at most one window of them past its bytes.
-- KEYS: job hash, output   ARGV: chunk, offset, most bytes to read, the `output_gen` the
-- reader started on ("" at first)
-- Returns {code, output_gen, output bytes, chunk, offset, data}, the cursor after the
-- data; code 1: read ("" at the end), 0: the output was replaced since, -1: no such job.
local WINDOW = 1024

if redis.call('EXISTS', KEYS[1]) == 0 then
  return {-1, '', 0, 0, 0, ''}
end
local gen = redis.call('HGET', KEYS[1], 'output_gen') or '0'
if ARGV[4] ~= '' and ARGV[4] ~= gen then
  return {0, gen, 0, 0, 0, ''}
end
local e, o, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local kind = redis.call('TYPE', KEYS[2])['ok']
if kind == 'string' then
  local total = redis.call('STRLEN', KEYS[2])
  local data = ''
  if n > 0 and o < total then
    data = redis.call('GETRANGE', KEYS[2], o, o + n - 1)
  end
  return {1, gen, total, 0, o + #data, data}
end
local total = tonumber(redis.call('HGET', KEYS[1], 'output_bytes') or '0')
if kind == 'none' or n == 0 then
  return {1, gen, total, e, o, ''}
end

-- The cursor moves onto a chunk only once that chunk is seen to exist: a cursor at the
-- end of the last chunk stays there, where the next commit's bytes will be.
local parts, want = {}, n
local first, width, largest, size = e, 1, 1, 0 -- size: chunk e's
while want > 0 do
  local window = redis.call('LRANGE', KEYS[2], first, first + width - 1)
  for i, chunk in ipairs(window) do
    if first + i - 1 > e then -- chunk e is read to its end
      e, o = e + 1, o - size
    end
    size = #chunk
    largest = math.max(largest, size)
    if o < size then
      local data = string.sub(chunk, o + 1, o + want)
      parts[#parts + 1] = data
      o, want = o + #data, want - #data
      if want == 0 then
        break
      end
    end
  end
  if #window < width then
    break
  end
  first = first + width
  width = math.min(math.ceil(want / largest), 2 * width, WINDOW)
end
return {1, gen, total, e, o, table.concat(parts)}
