-- fair-release: release a FairMutex by handing it straight to the oldest live waiter, or leave its
-- queue (a waiter that timed out or was aborted).
-- KEYS[1] the lock key
-- KEYS[2] the fencing counter of the lock
-- KEYS[3] the queue: a list of waiter tokens, oldest first
-- KEYS[4] the waiters: a hash, waiter token -> "deadline ms (server time)|lease TTL ms|grant channel"
-- KEYS[5] the release tombstone: the last token that released this lock, kept 60 s
-- ARGV[1] the token that releases the lock, or whose queue entry is removed
-- Reply: 1 when this token held the lock (it now belongs to the next live waiter, or is free when
--        none is left), or when this token is the one that released it last (a release re-sent
--        after its reply was lost: it did release; nothing changes); 0 when it did not (its queue
--        entry, if any, is removed; nothing else changes, except that a lock found free with live
--        waiters queued is handed to the oldest of them).
-- A hand-off sets the lock to the waiter's token with the waiter's TTL, takes the next fencing token
-- and publishes "token:fencing token:server time ms" (integers in full decimal digits) on the
-- waiter's channel, so the waiter holds the lock without another round trip. Entries whose deadline
-- passed are dropped on the way. A refused PUBLISH (an ACL user without channel permissions) is
-- ignored, since the lock has already changed hands: the waiter finds it its own at its next attempt.
-- #include next-fence.lua
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me = ARGV[1]

local function hand_off()
  while true do
    local head = redis.call('lpop', KEYS[3])
    if not head then return false end
    local entry = redis.call('hget', KEYS[4], head)
    redis.call('hdel', KEYS[4], head)
    if entry and head ~= me then
      local deadline, ttl, channel = string.match(entry, '^(%d+)|(%d+)|(.*)$')
      if tonumber(deadline) >= now then
        redis.call('set', KEYS[1], head, 'PX', ttl)
        local fence = next_fence(KEYS[2], t)
        redis.pcall('publish', channel, head .. ':' .. string.format('%d', fence) .. ':' .. string.format('%d', now))
        return true
      end
    end
  end
end

local owner = redis.call('get', KEYS[1])
if owner == me then
  if not hand_off() then redis.call('del', KEYS[1]) end
  redis.call('set', KEYS[5], me, 'PX', 60000)
  return 1
end
if redis.call('get', KEYS[5]) == me then return 1 end
if redis.call('hdel', KEYS[4], me) == 1 then
  redis.call('lrem', KEYS[3], 1, me)
end
if not owner then hand_off() end
return 0
