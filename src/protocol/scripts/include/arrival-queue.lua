-- arrival-queue (included by the FairMutex scripts that serve the queue, before grant-waiter.lua): the
-- queue, a list in arrival order, and its entries. placed-line.lua is the same interface over a
-- sorted set (a Redlock quorum's line).
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

-- The waiting hash (token -> current deadline ms) says who is queued: a re-sent enqueue (a client
-- re-sends an unanswered command after a reconnect) finds itself there and does not queue twice,
-- and an entry whose token is not in it (its waiter left) is never handed the lock. An entry's
-- own deadline is the one it was queued with; a renewal moves only the hash's, which is read just
-- for entries past their own.

-- Pops entries until a live one: still a member, its deadline (or renewed deadline) not passed.
-- Entries of `skip` are dropped; an entry of `mine` is returned as is. Dead entries are dropped.
local function pop_live(queue, waiting, now, skip, mine)
  while true do
    local raw = redis.call('lpop', queue)
    if not raw then return nil end
    local entry = decode_entry(raw)
    if entry then
      local deadline = entry.deadline
      if deadline < now and entry.token ~= mine then
        deadline = tonumber(redis.call('hget', waiting, entry.token) or '0')
      end
      local member = redis.call('hdel', waiting, entry.token) == 1
      if member and entry.token ~= skip and (entry.token == mine or deadline >= now) then
        return entry
      end
    end
  end
end

-- Queues `token` (a first attempt, or a later one), or renews its place when it is queued already.
-- Returns true when the queue list was created by this call (it has no TTL yet).
local function join_queue(queue, waiting, token, deadline, ttl, channel)
  local at = string.format('%d', deadline)
  if redis.call('hsetnx', waiting, token, at) == 0 then
    redis.call('hset', waiting, token, at)
    return false
  end
  return redis.call('rpush', queue, string.format('%d|%d|%d|', deadline, ttl, #channel) .. channel .. token) == 1
end

-- A FairMutex's queue is served strictly: its first waiter is always due (see placed-line.lua).
local function first_not_due(queue, now)
  return nil
end

-- A lock found free is handed to the first live entry even when its hand-off message reaches
-- nobody (its subscriber may be reconnecting; the lock kind's own release decides otherwise).
local hand_off_skips_unreached = false

-- Removes `token`'s entry from the queue (a waiter giving up): O(queue length), off the hot path.
local function leave_queue(queue, waiting, token)
  if redis.call('hdel', waiting, token) == 0 then return end
  for _, raw in ipairs(redis.call('lrange', queue, 0, -1)) do
    local entry = decode_entry(raw)
    if entry and entry.token == token then
      redis.call('lrem', queue, 1, raw)
      return
    end
  end
end
