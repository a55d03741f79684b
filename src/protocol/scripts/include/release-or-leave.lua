-- release-or-leave: release a hand-off lock by handing it straight to the oldest live waiter (or, while
-- that waiter is not yet due, freeing it: grant_next_waiter), or leave its queue (hand-off-,
-- reentrant- and redlock-release.lua).
-- Needs: server_time (server-time.lua), free_holder and store_released (holder.lua), grant_next_waiter
-- (grant-waiter.lua); reads no KEYS or ARGV: the script passes them.
-- Provides: release_or_leave(lock, holder, released, me, skip_unreached) -> hand-off-release.lua's
-- reply (2 only for a queue that is `quiet`: arrival-queue.lua), and true when this release left
-- the lock free (not handed over). `lock` is hand_off_lock's table, `holder` and `released` what decode_holder returned for
-- the lock key; the others are as hand-off-release.lua's header names them.
-- A holder nobody queued behind (queue expiry 0) is released without reading the clock or the queue.
local function release_or_leave(lock, holder, released, me, skip_unreached)
  if holder and holder.token == me then
    local queue_expiry, asleep = holder.queue_expiry, false
    if queue_expiry > 0 then
      local now_us, now = server_time()
      local next_holder, emptied = grant_next_waiter(lock, holder, me, me, now_us, now, skip_unreached)
      if next_holder then return 1 end
      if emptied then queue_expiry = 0 else asleep = lock.queue.quiet == true end
    end
    free_holder(lock.key, lock.fence, holder, queue_expiry)
    return asleep and 2 or 1, true
  end
  -- A waiter giving up leaves the queue before anything else: one acquire call keeps its token
  -- across attempts, so a call that gave back a hand-off it was too late to use (the next holder, or
  -- the release, then names it `prev`) and queued again is a waiter here, not a re-sent release.
  -- Left queued, it would be handed the lock later, and the lock would sit unused for its TTL.
  if not lock.queue:leave(me) then
    if holder and holder.prev == me then return 1 end
    if released and released.prev == me then return 1 end
  end
  if not holder and (not released or released.queue_expiry > 0) then
    -- A lock found free (its holder expired, or a release freed it for a waiter not yet due) with
    -- live waiters queued goes to the oldest of them, or wakes it while it is not yet due.
    local now_us, now = server_time()
    local fence = released and released.fence
    local next_holder, emptied = grant_next_waiter(lock, released, me, released and released.prev or '', now_us, now, skip_unreached)
    if released and not next_holder and (emptied or released.fence ~= fence) then
      store_released(lock.key, released.fence, released.prev, emptied and 0 or released.queue_expiry)
    end
  end
  return 0
end
