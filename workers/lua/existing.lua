-- Put before create.lua and create_failed.lua (``JobStore._script``): what creating a job
-- answers when its id is taken.
-- existing_job(key): {0, batch, status, expires_at} of the job there; {0, '', '', ''} for a
-- late field of an expired job (no job, nothing to create); nil when the id is free.
local function existing_job(key)
  local found = redis.call('HMGET', key, 'status', 'batch', 'expires_at')
  if found[1] then
    return {0, found[2] or '', found[1], found[3] or ''}
  end
  if redis.call('EXISTS', key) == 1 then
    return {0, '', '', ''}
  end
  return nil
end
