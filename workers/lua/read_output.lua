-- Read a job's output from a cursor (workers.store.JobStore.iter_output; the layout is
-- in output.lua). The cursor is a chunk index and a byte offset in it: the text only
-- grows at its end, so it stays valid while commits append (a full last chunk then
-- spans the next ones: the offset walks on), and an offset in the old single string
-- is the same offset in the chunks it is cut into.
-- KEYS: job hash, output   ARGV: chunk, offset, most bytes to read, the `output_gen` the
-- reader started on ("" at first)
-- Returns {code, output_gen, output bytes, chunk, offset, data}, the cursor after the
-- data; code 1: read ("" at the end), 0: the output was replaced since, -1: no such job.
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
local count = redis.call('LLEN', KEYS[2])
while e < count do
  local chunk = redis.call('LINDEX', KEYS[2], e)
  if o < #chunk then
    local data = string.sub(chunk, o + 1, o + n)
    return {1, gen, total, e, o + #data, data}
  end
  o = o - #chunk
  e = e + 1
end
return {1, gen, total, e, o, ''}
