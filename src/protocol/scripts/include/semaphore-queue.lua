-- semaphore-queue (included by the Semaphore scripts that grant permits; needs next-fence.lua and
-- semaphore-holders.lua before it): the FIFO queue of waiters, and handing permits to them.
-- The queue is a list of waiter tokens, oldest first; each waiter's entry is in a hash,
-- token -> "<deadline ms (server time)>|<lease TTL ms>|<permits>|<grant channel>".
-- `keys` names them: {fence, queue, waiters}; `holders` is what read_holders returned.

-- The limit in force: the one `setLimit` stored for this name, else the caller's `limit` option.
local function current_limit(limit_key, given)
  return tonumber(redis.call('get', limit_key) or given)
end

-- Grants `permits` to `token` for `ttl` ms and returns its fencing token.
local function grant(keys, holders, token, permits, ttl, t, now)
  local fence = next_fence(keys.fence, t)
  hold_for(holders, string.format('%d|%d|', permits, fence) .. token, ttl, now)
  holders.held = holders.held + permits
  return fence
end

-- Removes `token`'s queue entry, if it has one.
local function leave_queue(keys, token)
  if redis.call('hdel', keys.waiters, token) == 1 then redis.call('lrem', keys.queue, 1, token) end
end

-- Hands permits to the waiters at the head of the queue, oldest first, while the head's request
-- fits in the free permits (`limit` less those held; `limit` may be a function that reads it, called
-- only when someone waits): the waiter's entry becomes a holder with its TTL and the next fencing
-- token, and "token:fencing token:server time ms" is published on its channel, so it holds the
-- permits without another round trip. The first request that does not fit stops it (nobody behind
-- overtakes it, so a large request is not starved by small ones). Entries past their deadline
-- (their waiter died or gave up) and requests above the limit (lowered by `setLimit`) are dropped.
-- Stops at `me` (a waiter serving the queue on its own attempt decides for itself). A refused
-- PUBLISH (an ACL user without channel permissions) is ignored: the waiter finds the permits its
-- own at its next attempt. Returns who is at the head now: 'none' (the queue is empty), 'me', or
-- 'other'; `holders` counts the permits handed out.
local function serve(keys, holders, limit, t, now, me)
  while true do
    local head = redis.call('lindex', keys.queue, 0)
    if not head then return 'none' end
    if head == me then return 'me' end
    if type(limit) == 'function' then limit = limit() end
    local entry = redis.call('hget', keys.waiters, head)
    local deadline, ttl, permits, channel
    if entry then deadline, ttl, permits, channel = string.match(entry, '^(%d+)|(%d+)|(%d+)|(.*)$') end
    local live = deadline and tonumber(deadline) >= now and tonumber(permits) <= limit
    if live and tonumber(permits) > limit - holders.held then return 'other' end
    redis.call('lpop', keys.queue)
    redis.call('hdel', keys.waiters, head)
    if live then
      local fence = grant(keys, holders, head, tonumber(permits), tonumber(ttl), t, now)
      redis.pcall('publish', channel,
        head .. ':' .. string.format('%d', fence) .. ':' .. string.format('%d', now))
    end
  end
end
