-- server-time: the server's clock (TIME: one clock for every client; Redis 5+ replicates a script's
-- effects, so it may be read before writing).
-- Needs: nothing; reads no KEYS or ARGV.
-- Provides: server_time() -> the TIME reply (for next_fence), and its whole milliseconds.
local function server_time()
  local t = redis.call('time')
  return t, tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
