-- fair-queue (included by the FairMutex scripts that serve the queue; needs next-fence.lua and
-- fair-holder.lua before it): the queue's entries, and handing the lock to one of them.
-- Queue entries: "<deadline ms>|<lease TTL ms>|<#channel>|<channel><token>" (token last, as above).
local function decode_entry(raw)
  local deadline, ttl, channel_len, rest = string.match(raw, '^(%d+)|(%d+)|(%d+)|(.*)$')
  if not deadline then return nil end
  channel_len = tonumber(channel_len)
  return {
    deadline = tonumber(deadline), ttl = tonumber(ttl), channel = string.sub(rest, 1, channel_len),
    token = string.sub(rest, channel_len + 1),
  }
end

-- Pops entries until a live one: its deadline not passed, or renewed (renewals hash) past now.
-- Entries of `skip` are dropped; an entry of `mine` is returned as is. Dead entries are dropped.
local function pop_live(queue, renewals, now, skip, mine)
  while true do
    local raw = redis.call('lpop', queue)
    if not raw then return nil end
    local entry = decode_entry(raw)
    if entry and entry.token ~= skip then
      if entry.token == mine or entry.deadline >= now then return entry end
      local renewed = redis.call('hget', renewals, entry.token)
      if renewed then
        redis.call('hdel', renewals, entry.token)
        if tonumber(renewed) >= now then return entry end
      end
    end
  end
end

-- Hands the lock to `entry`: the next fencing token (from `from`, the previous holder, when known),
-- the lock set to the entry's token with its TTL, and "token:fencing token:server time ms" published
-- on its channel. A refused PUBLISH (an ACL user without channel permissions) is ignored: the waiter
-- finds the lock its own at its next attempt. Returns the new holder.
local function hand_to(lock, fence_key, entry, from, prev, t, now)
  local fence = next_fence(fence_key, t, from and from.fence)
  local holder = {
    fence = fence, expiry = now + entry.ttl, min_ttl = from and from.min_ttl or 0,
    queue_expiry = from and from.queue_expiry or 0, prev = prev, token = entry.token,
  }
  store_holder(lock, holder, now)
  redis.pcall('publish', entry.channel,
    entry.token .. ':' .. string.format('%d', fence) .. ':' .. string.format('%d', now))
  return holder
end

-- Removes `token`'s entry from the queue (a waiter giving up): O(queue length), off the hot path.
local function leave_queue(queue, renewals, token)
  for _, raw in ipairs(redis.call('lrange', queue, 0, -1)) do
    local entry = decode_entry(raw)
    if entry and entry.token == token then
      redis.call('lrem', queue, 1, raw)
      break
    end
  end
  redis.call('hdel', renewals, token)
end
