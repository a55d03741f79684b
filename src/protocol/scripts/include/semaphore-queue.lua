-- semaphore-queue: a Semaphore's queue of waiters, and handing permits to them (the Semaphore
-- scripts that grant permits, and rw-downgrade.lua).
-- Needs: next_fence (next-fence.lua), hold_for (semaphore-holders.lua), notify (notify.lua); reads
-- no KEYS or ARGV.
-- Provides: grant(keys, holders, token, permits, ttl, label, now_us, now), leave_queue(keys, token),
-- enqueue(keys, token, place, waiters), drop_over_limit(keys, limit), serve(keys, holders, limit,
-- now_us, now, me, head), queue_entry(deadline, ttl, permits, channel, label, place, cap), below (and
-- their helpers decode_entry, refuse).
-- The queue is a list of waiter tokens, first served first: in arrival order (a Semaphore's), or in
-- the order of their places (a RedlockSemaphore's, see enqueue). Each waiter's entry is in a hash,
-- token -> "<deadline ms (server time)>|<lease TTL ms>|<permits>|<place>|<cap>|<#channel>|<grant
-- channel><label>" (queue_entry builds one; the place is 0 in arrival order; the cap is the most
-- permits the waiter's own limit lets be held, whatever limit is stored: a RedlockSemaphore's, whose
-- grants are safe unread only if no server ever holds more than it, 0 for none).
-- `keys` names them: {fence, queue, waiters, last_fence, fence_step_us}, last_fence being the
-- fencing counter's value when the script has read it (nil: read it at the first grant) and
-- fence_step_us next_fence's step (nil: microseconds); `holders` is what read_holders returned.

-- Grants `permits` to `token` for `ttl` ms and returns its fencing token.
local function grant(keys, holders, token, permits, ttl, label, now_us, now)
  local fence = next_fence(keys.fence, now_us, keys.last_fence, keys.fence_step_us)
  keys.last_fence = fence
  hold_for(holders, holder_member(permits, fence, label, token), ttl, now)
  holders.held = holders.held + permits
  return fence
end

-- Removes `token`'s queue entry, if it has one.
local function leave_queue(keys, token)
  if redis.call('hdel', keys.waiters, token) == 1 then redis.call('lrem', keys.queue, 1, token) end
end

-- A queue entry's fields (nil when it is missing or malformed).
local function decode_entry(entry)
  if not entry then return nil end
  local deadline, ttl, permits, place, cap, channel_len, rest =
    string.match(entry, '^(%d+)|(%d+)|(%d+)|(%d+)|(%d+)|(%d+)|(.*)$')
  if not deadline then return nil end
  channel_len = channel_len + 0 -- digits: converted once (server-time.lua)
  return {
    deadline = deadline + 0, ttl = ttl + 0, permits = permits + 0, place = place + 0, cap = cap + 0,
    channel = string.sub(rest, 1, channel_len), label = string.sub(rest, channel_len + 1),
  }
end

-- A waiter's entry: what decode_entry reads back.
local function queue_entry(deadline, ttl, permits, channel, label, place, cap)
  return string.format('%d|%d|%d|%d|%d|%d|', deadline, ttl, permits, place, cap, #channel) .. channel .. label
end

-- Puts `token` (whose entry is not in the queue) at the back of the queue; or, with a `place` (a
-- RedlockSemaphore's: its acquire call's wall-clock ms when it first joined, the same on every
-- server), before the queued waiter with the earliest place after it (ties: the higher token), so
-- that every server of a quorum keeps the waiters it knows in one order and hands permits to the
-- same one. `waiters` is the waiters' hash as HGETALL read it. O(waiters). Returns the queue's
-- length.
local function enqueue(keys, token, place, waiters)
  local pivot, pivot_place
  for i = 1, place and #waiters or 0, 2 do
    local other, entry = waiters[i], decode_entry(waiters[i + 1])
    if entry and other ~= token
      and (entry.place > place or (entry.place == place and other > token))
      and (not pivot or entry.place < pivot_place or (entry.place == pivot_place and other < pivot)) then
      pivot, pivot_place = other, entry.place
    end
  end
  if pivot then
    -- -1 (the pivot's entry outlived its place in the list) or 0 (no list): at the back.
    local length = redis.call('linsert', keys.queue, 'BEFORE', pivot, token)
    if length > 0 then return length end
  end
  return redis.call('rpush', keys.queue, token)
end

-- Tells a waiter dropped because its request is above the limit in force: "token:over:limit" on
-- its channel, so it rejects at once rather than at its next attempt (a waiter that does not listen
-- learns it then, from that attempt's reply).
local function refuse(token, channel, limit)
  if channel ~= '' then
    notify(channel, token .. ':over:' .. string.format('%d', limit))
  end
end

-- Drops every queued request above `limit` (lowered by setLimit: they could never be granted),
-- telling each. O(waiters).
local function drop_over_limit(keys, limit)
  for _, token in ipairs(redis.call('lrange', keys.queue, 0, -1)) do
    local entry = decode_entry(redis.call('hget', keys.waiters, token))
    if entry and entry.permits > limit then
      leave_queue(keys, token)
      refuse(token, entry.channel, limit)
    end
  end
end

-- Hands permits to the waiters at the head of the queue, oldest first, while the head's request
-- fits in the free permits (`limit` less those held; `limit` may be a function that reads it, called
-- only when someone waits): the waiter's entry becomes a holder with its TTL and the next fencing
-- token, and "token:fencing token:server time ms" is published on its channel, so it holds the
-- permits without another round trip. The first request that does not fit stops it (nobody behind
-- overtakes it, so a large request is not starved by small ones). Entries past their deadline
-- (their waiter died or gave up) and requests above the limit (lowered by `setLimit`) are dropped,
-- the latter told so (`refuse`). A waiter's cap (queue_entry) lowers the limit it is served under.
-- Stops at `me` (a waiter serving the queue on its own attempt decides for itself). A refused
-- PUBLISH (an ACL user without channel permissions) is ignored, and an entry without a channel (a
-- waiter that does not listen) is sent nothing: the waiter finds the permits its own at its next
-- attempt. Returns who is at the head now: 'none' (the queue is empty), 'me', 'other', or 'full'
-- (no permit is free: the head is not looked at, as nothing could be handed to it); `holders`
-- counts the permits handed out. `head` is the queue's head when the caller has read it (nil: read).
local function serve(keys, holders, limit, now_us, now, me, head)
  while type(limit) == 'function' or limit > holders.held do
    head = head or redis.call('lindex', keys.queue, 0)
    if not head then return 'none' end
    if head == me then return 'me' end
    if type(limit) == 'function' then limit = limit() end
    local entry = decode_entry(redis.call('hget', keys.waiters, head))
    local alive = entry and entry.deadline >= now
    local fits = alive and entry.cap > 0 and math.min(limit, entry.cap) or limit
    local live = alive and entry.permits <= fits
    if live and entry.permits > fits - holders.held then return 'other' end
    redis.call('lpop', keys.queue)
    redis.call('hdel', keys.waiters, head)
    if live then
      local fence = grant(keys, holders, head, entry.permits, entry.ttl, entry.label, now_us, now)
      if entry.channel ~= '' then
        notify(entry.channel,
          head .. ':' .. string.format('%d', fence) .. ':' .. string.format('%d', now))
      end
    elseif alive then
      refuse(head, entry.channel, limit)
    end
    head = nil
  end
  return 'full'
end
