-- next-fence: the next fencing token of a lock (included in every script that grants one).
-- Needs: nothing; reads no KEYS or ARGV.
-- Provides: next_fence(key, now_us, last, step_us) -> the token. Sets the counter at `key` to
-- max(counter + 1, server time in microseconds) and returns it. The time floor keeps tokens above
-- every earlier one even after the counter was lost (a restart without persistence, an eviction, a
-- failover to a replica that had not seen the last grants), provided the server's clock does not go
-- back. Microseconds since 1970 (~1.8e15) and any counter below 2^53 are exact in Lua's numbers,
-- and '%d' writes them back exactly (Lua's default formatting would round to 14 significant digits).
-- `now_us` is the server time in microseconds (server_time's first result). `last` is the
-- counter's value when the script already knows it (the previous holder's token, written with the
-- counter in the same script), or nil to read it. `step_us` is the floor's step: nil or 1 (microseconds). A Redlock
-- quorum's scripts step by whole seconds (1000000; redlock-acquire.lua, and the Semaphore's scripts
-- as a RedlockSemaphore calls them): the servers' counters then agree (each adds 1 per grant) while
-- they saw the same grants, except in the instant a second turns, so the quorum's highest token is
-- already on a quorum and needs no write-back round trip (redlock-acquire.lua says more).
local function next_fence(key, now_us, last, step_us)
  local floor = step_us and now_us - now_us % step_us or now_us
  last = last or tonumber(redis.call('get', key) or '0')
  local fence = math.max(last + 1, floor)
  redis.call('set', key, string.format('%d', fence))
  return fence
end
