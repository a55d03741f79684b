-- grant-waiter (included by the scripts that hand a lock to a waiter; needs next-fence.lua,
-- holder.lua and a queue, arrival-queue.lua or placed-line.lua, before it): handing the lock
-- to the queue's next live entry.

-- Hands the lock to `entry`: the next fencing token (from `from`, the previous holder, when known),
-- the lock set to the entry's token with its TTL, and "token:fencing token:server time ms" published
-- on its channel. A refused PUBLISH (an ACL user without channel permissions) is ignored: the waiter
-- finds the lock its own at its next attempt. With `skip_unreached`, a PUBLISH that reached nobody
-- hands nothing (its process is gone) and returns nil; the counter has moved on, which only skips a
-- token. An entry without a channel is a waiter that polls (it could not subscribe): nothing is
-- published and it is never skipped, since it finds the lock its own at its next poll (skipped, it
-- starved while listening waiters kept the lock busy). Returns the new holder.
local function grant_waiter(lock, fence_key, entry, from, prev, t, now, skip_unreached)
  local fence = next_fence(fence_key, t, from and from.fence)
  local reached = 1
  if entry.channel ~= '' then
    reached = redis.pcall('publish', entry.channel,
      entry.token .. ':' .. string.format('%d', fence) .. ':' .. string.format('%d', now))
  end
  if skip_unreached and reached == 0 then
    if from then from.fence = fence end
    return nil
  end
  local holder = {
    fence = fence, expiry = now + entry.ttl, min_ttl = from and from.min_ttl or 0,
    queue_expiry = from and from.queue_expiry or 0, prev = prev, token = entry.token,
  }
  store_holder(lock, holder, now)
  return holder
end

-- Hands the lock from `from` (the holder, or nil when the lock is free) to the oldest live waiter
-- other than `releaser`. Returns the new holder, or nil when nobody was left to hand it to.
-- Nobody while the first waiter is not yet due (see placed-line.lua): the lock is then freed.
local function grant_next_waiter(lock, fence_key, queue, waiting, from, releaser, t, now, skip_unreached)
  if first_not_due(queue, now) then return nil end
  while true do
    local head = pop_live(queue, waiting, now, releaser, nil)
    if not head then return nil end
    local holder = grant_waiter(lock, fence_key, head, from, from and releaser or '', t, now, skip_unreached)
    if holder then return holder end
  end
end

