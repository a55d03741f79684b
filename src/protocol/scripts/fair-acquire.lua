-- fair-acquire: take a FairMutex in strict arrival order, or join (or renew a place in) its queue.
-- KEYS[1] the lock key (holds the owner token while locked)
-- KEYS[2] the fencing counter of the lock (never expires, so tokens only grow)
-- KEYS[3] the queue: a list of waiter tokens, oldest first
-- KEYS[4] the waiters: a hash, waiter token -> "deadline ms (server time)|lease TTL ms|grant channel"
-- ARGV[1] the owner token of this acquisition (the same for every attempt of one acquire call)
-- ARGV[2] the lease TTL in milliseconds
-- ARGV[3] how long this waiter's queue entry lives without being renewed, in ms; 0 for a single try
--         that never queues (tryAcquire)
-- ARGV[4] the channel this waiter hears its hand-off on
-- Reply: {1, fencing token, server time ms} when acquired (now, or by an earlier hand-off: the TTL is
--        then restarted, so the caller may count it from when it sent this request);
--        {0, wait bound in ms, server time ms} when queued (or not taken, with ARGV[3] 0). The wait
--        bound is the longest the caller should wait before trying again: min(the holder's PTTL, the
--        shortest lease TTL among the other live waiters), since any waiter ahead may be handed the
--        lock and crash, and the caller must be awake by that lock's expiry to hand it on (waiters
--        behind only make it wake a little early). -1 when neither bounds it (a holder without
--        expiry and no other waiter). Costs O(waiters) when not acquired.
-- The lock goes to the caller only when it is free and no live waiter is ahead. When it is free and
-- a live waiter is ahead (the holder expired without a release), it is handed to that waiter here.
-- A hand-off sets the lock to the waiter's token with the waiter's TTL, takes the next fencing token
-- and publishes "token:fencing token:server time ms" on the waiter's channel (integers in full
-- decimal digits). A refused PUBLISH (an ACL user without channel permissions) is ignored: the
-- waiter finds the lock its own at its next attempt.
-- Server time (TIME) keeps entry deadlines in one clock for every client; Redis 5+ replicates a
-- script's effects, so reading TIME before writing is allowed.
-- #include next-fence.lua
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me = ARGV[1]

local owner = redis.call('get', KEYS[1])
if owner == me then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {1, tonumber(redis.call('get', KEYS[2]) or '0'), now}
end

if not owner then
  -- Serve the queue: drop entries whose deadline passed (their waiters died or gave up) until a
  -- live one is found. Our own entry counts as live: we are here, whatever its deadline says.
  local head, entry
  while true do
    head = redis.call('lpop', KEYS[3])
    if not head then break end
    entry = redis.call('hget', KEYS[4], head)
    redis.call('hdel', KEYS[4], head)
    if head == me then break end
    if entry and tonumber(string.match(entry, '^(%d+)|')) >= now then break end
  end
  if head == me or not head then
    redis.call('hdel', KEYS[4], me)
    redis.call('set', KEYS[1], me, 'PX', ARGV[2])
    return {1, next_fence(KEYS[2], t), now}
  end
  if head then
    local ttl, channel = string.match(entry, '^%d+|(%d+)|(.*)$')
    redis.call('set', KEYS[1], head, 'PX', ttl)
    local fence = next_fence(KEYS[2], t)
    redis.pcall('publish', channel, head .. ':' .. string.format('%d', fence) .. ':' .. string.format('%d', now))
  end
end

local lifetime = tonumber(ARGV[3])
if lifetime > 0 then
  local entry = string.format('%d', now + lifetime) .. '|' .. ARGV[2] .. '|' .. ARGV[4]
  if redis.call('hset', KEYS[4], me, entry) == 1 then
    redis.call('rpush', KEYS[3], me)
  end
  -- The queue keys outlive their longest-lived entry, and no longer: an abandoned queue goes away.
  for i = 3, 4 do
    if redis.call('pttl', KEYS[i]) < lifetime then redis.call('pexpire', KEYS[i], lifetime) end
  end
end
local bound = redis.call('pttl', KEYS[1])
local waiters = redis.call('hgetall', KEYS[4])
for i = 1, #waiters, 2 do
  local deadline, ttl = string.match(waiters[i + 1], '^(%d+)|(%d+)|')
  ttl = tonumber(ttl)
  if waiters[i] ~= me and ttl and tonumber(deadline) >= now and (bound < 0 or ttl < bound) then
    bound = ttl
  end
end
return {0, bound, now}
