-- release-or-leave: release a hand-off lock by handing it straight to the oldest live waiter, or
-- leave its queue (hand-off-, reentrant- and redlock-release.lua).
-- Needs: server_time (server-time.lua), grant_next_waiter (grant-waiter.lua); reads no KEYS or
-- ARGV: the script passes them.
-- Provides: release_or_leave(lock, tombstone_key, holder, me, skip_unreached) ->
-- hand-off-release.lua's reply. `lock` is hand_off_lock's table, `holder` the decoded lock value
-- (nil when free); the others are as hand-off-release.lua's header names them.
local function release_or_leave(lock, tombstone_key, holder, me, skip_unreached)
  if holder and holder.token == me then
    local t, now = server_time()
    if not grant_next_waiter(lock, holder, me, t, now, skip_unreached) then
      redis.call('del', lock.key)
      redis.call('set', tombstone_key, me, 'PX', 60000)
    end
    return 1
  end
  if holder and holder.prev == me then return 1 end
  if redis.call('get', tombstone_key) == me then return 1 end
  lock.queue:leave(me)
  if not holder then
    -- A lock found free (its holder expired) with live waiters queued goes to the oldest of them.
    local t, now = server_time()
    grant_next_waiter(lock, nil, me, t, now, skip_unreached)
  end
  return 0
end
