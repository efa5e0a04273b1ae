-- Write fields of a job's hash only while the job exists: a worker that writes after the
-- job expired (retention) must not bring it back as a bare hash with no status and no
-- expiry, which would hold its id forever.
-- KEYS: job hash   ARGV: "incr" field amount | "set" field value [field value ...]
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
if ARGV[1] == 'incr' then
  redis.call('HINCRBY', KEYS[1], ARGV[2], ARGV[3])
else
  for i = 2, #ARGV, 2 do
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return 1
