-- release-or-leave (included by hand-off-release.lua and reentrant-release.lua; needs next-fence.lua,
-- holder.lua, a queue (arrival-queue.lua or placed-line.lua) and grant-waiter.lua before it): release a hand-off lock by handing it straight to
-- the oldest live waiter, or leave its queue. Reads the first five keys and the first two
-- arguments as hand-off-release.lua's header names them; returns hand-off-release's reply. `holder` is the decoded
-- lock value (nil when free).
local function release_or_leave(holder)
  local me = ARGV[1]
  if holder and holder.token == me then
    local t, now = server_time()
    if not grant_next_waiter(KEYS[1], KEYS[2], KEYS[3], KEYS[4], holder, me, t, now, ARGV[2] == '1') then
      redis.call('del', KEYS[1])
      redis.call('set', KEYS[5], me, 'PX', 60000)
    end
    return 1
  end
  if holder and holder.prev == me then return 1 end
  if redis.call('get', KEYS[5]) == me then return 1 end
  leave_queue(KEYS[3], KEYS[4], me)
  if not holder then
    -- A lock found free (its holder expired) with live waiters queued goes to the oldest of them.
    local t, now = server_time()
    grant_next_waiter(KEYS[1], KEYS[2], KEYS[3], KEYS[4], nil, me, t, now, ARGV[2] == '1')
  end
  return 0
end
