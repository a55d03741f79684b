-- fenced-write: how a Redis-held resource checks fencing tokens. A write is applied only when its
-- token is at least every token accepted before, so a paused ex-holder's late write is refused
-- while the current holder may write as often as it likes under its one lease.
-- KEYS[1] the resource key to write
-- KEYS[2] the key remembering the highest fencing token accepted for this resource
-- ARGV[1] the writer's fencing token (a positive integer)
-- ARGV[2] the value to store in KEYS[1]
-- Reply: {1, token} when written; {0, highest token accepted} when refused as stale (lower).
local last = tonumber(redis.call('get', KEYS[2]) or '0')
local token = tonumber(ARGV[1])
if token >= last then
  redis.call('set', KEYS[2], ARGV[1])
  redis.call('set', KEYS[1], ARGV[2])
  return {1, token}
end
return {0, last}
