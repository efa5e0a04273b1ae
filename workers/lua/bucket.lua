-- Take `cost` tokens from a token bucket shared by every worker, on Redis's clock.
-- KEYS: bucket hash (fields: tokens, a float; ts, Redis TIME in microseconds)
-- ARGV: rate (tokens per second, float > 0), burst (capacity, integer >= 1), cost (<= burst)
-- Returns 0 when the tokens were taken, else the milliseconds (integer >= 1) until `cost`
-- tokens are available; nothing is taken then. A missing bucket is full.
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
if not rate or rate <= 0 or not burst or burst < 1 or not cost or cost < 1 or cost > burst then
  return redis.error_reply('bucket: need rate > 0, burst >= 1 and 1 <= cost <= burst')
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])  -- exact: below 2^53

local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end
local elapsed = now - ts
if elapsed < 0 then
  elapsed = 0  -- the clock went back (a failover): refill nothing, restart from now
end
tokens = math.min(burst, tokens + elapsed / 1000000 * rate)

local wait = 0
if tokens + 1e-9 >= cost then  -- the epsilon absorbs float error after an exact sleep
  tokens = math.max(0, tokens - cost)
else
  wait = math.max(1, math.ceil((cost - tokens) / rate * 1000))
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'ts',
  string.format('%.17g', now))

-- An idle bucket is full again after burst / rate seconds: let it go after twice that,
-- plus a second (capped at 30 days, which only very slow buckets reach).
local ttl = math.min(math.ceil((2 * burst / rate + 1) * 1000), 2592000000)
redis.call('PEXPIRE', KEYS[1], ttl)
return wait
