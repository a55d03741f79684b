-- grant-waiter: hands a hand-off lock to a waiter of its queue (on a release, or when an acquire
-- finds the lock free with waiters ahead).
-- Needs: next_fence (next-fence.lua), store_holder (holder.lua), notify (notify.lua); reads no KEYS
-- or ARGV.
-- Provides: hand_off_lock(lock_key, fence_key, queue, fence_step_us) -> the lock table the hand-off
-- functions take (fence_step_us: next_fence's step); grant_waiter and grant_next_waiter, below.
-- `queue` is a queue table from arrival_queue (arrival-queue.lua) or placed_line (placed-line.lua),
-- the one interface the hand-off code knows of a queue: queue.key and queue.waiting, its keys;
-- queue:pop_live(now, skip, mine) takes off entries up to the first live one and returns it
-- ({deadline, ttl, channel, label, token}; nil when none; `skip`'s is dropped, `mine`'s counts as live);
-- queue:join(token, deadline, ttl, channel, label, arrival) queues or renews `token`, true when that
-- created the queue key (it has no TTL yet); queue:leave(token), true when `token` was queued;
-- queue:first_not_due(now, skip), the first waiter ({token, and channel when queue.wakes_first})
-- while a release frees the lock rather than hand it over, else nil; queue.wakes_first, whether such
-- a release wakes that waiter with "token:free" on its channel (it then asks at once, and may take
-- the free lock); queue.skips_unreached, whether a lock found free passes over a waiter its hand-off
-- PUBLISH does not reach.
local function hand_off_lock(lock_key, fence_key, queue, fence_step_us)
  return {key = lock_key, fence = fence_key, queue = queue, fence_step_us = fence_step_us}
end

-- Hands the lock to `entry`: the next fencing token (from `from`, the previous holder or release,
-- when known),
-- the lock set to the entry's token with its TTL, and "token:fencing token:server time ms" published
-- on its channel. A refused PUBLISH (an ACL user without channel permissions) is ignored: the waiter
-- finds the lock its own at its next attempt. With `skip_unreached`, a PUBLISH that reached nobody
-- hands nothing (its process is gone) and returns nil; the counter has moved on, which only skips a
-- token. An entry without a channel is a waiter that polls (it could not subscribe): nothing is
-- published and it is never skipped, since it finds the lock its own at its next poll (skipped, it
-- starved while listening waiters kept the lock busy). `prev` is recorded as the token that handed
-- it over. Returns the new holder.
local function grant_waiter(lock, entry, from, prev, now_us, now, skip_unreached)
  local fence = next_fence(lock.fence, now_us, from and from.fence, lock.fence_step_us)
  local reached = 1
  if entry.channel ~= '' then
    reached = notify(entry.channel,
      entry.token .. ':' .. string.format('%d', fence) .. ':' .. string.format('%d', now))
  end
  if skip_unreached and reached == 0 then
    if from then from.fence = fence end
    return nil
  end
  local holder = {
    fence = fence, expiry = now + entry.ttl, min_ttl = from and from.min_ttl or 0,
    -- Others may still be queued: a hand-off pops one entry.
    queue_expiry = math.max(1, from and from.queue_expiry or 1), prev = prev, label = entry.label,
    token = entry.token,
  }
  store_holder(lock.key, holder, now)
  return holder
end

-- Hands the lock from `from` (the holder, or the release of a free lock, or nil) to the oldest live
-- waiter other than `skip`, recording `prev` as the token that handed it over. Returns the new
-- holder, or nil and whether the queue is now empty when nobody was handed it (not empty: the first
-- waiter is not yet due, queue:first_not_due; the lock is then freed, and that waiter is woken when
-- the queue wakes its first: "token:free" on its channel). With `skip_unreached`, a first waiter that
-- wake reaches nobody is dropped (its process is gone), and the next one is looked at instead.
local function grant_next_waiter(lock, from, skip, prev, now_us, now, skip_unreached)
  local queue = lock.queue
  while true do
    local first = queue:first_not_due(now, skip)
    if not first then break end
    if not queue.wakes_first or first.channel == '' then return nil, false end
    local reached = notify(first.channel, first.token .. ':free')
    if not skip_unreached or reached ~= 0 then return nil, false end
    queue:pop_live(now, skip, nil)
  end
  while true do
    local head = queue:pop_live(now, skip, nil)
    if not head then return nil, true end
    local holder = grant_waiter(lock, head, from, prev, now_us, now, skip_unreached)
    if holder then return holder end
  end
end
