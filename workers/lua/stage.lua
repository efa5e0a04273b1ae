-- Stage a part of a text too large for one argument (workers.store.JobStore.commit): cut
-- into chunks (output.lua, prepended with CHUNK) at the end of a list only that commit
-- writes, whose commit then takes it whole (commit.lua). The list expires unless its
-- commit comes: a worker that died meanwhile leaves nothing behind.
-- KEYS: the staging list   ARGV: the part (whole characters), the TTL in ms, the mark
-- the part before left ("0:0" for the first: no list yet)
-- Returns the mark this part leaves, or "" when the list is not as the part before left
-- it (it expired, or this part was staged already): then nothing is written.
if staged_mark(KEYS[1]) ~= ARGV[3] then
  return ''
end
append_chunks(KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return staged_mark(KEYS[1])
