-- server-time: the server's clock (TIME: one clock for every client; Redis 5+ replicates a script's
-- effects, so it may be read before writing).
-- Needs: nothing; reads no KEYS or ARGV.
-- Provides: server_time() -> the time in whole microseconds (next_fence's floor) and in whole
-- milliseconds.
-- TIME's two strings are each converted once, by arithmetic (Lua coerces a numeric string): tonumber
-- would run the C conversion twice per string, and these conversions were a tenth of an
-- uncontended cycle's Lua time.
local function server_time()
  local t = redis.call('time')
  local seconds, micros = t[1] + 0, t[2] + 0
  return seconds * 1000000 + micros, seconds * 1000 + math.floor(micros / 1000)
end
