-- fair-acquire: take a FairMutex in strict arrival order, or join (or renew a place in) its queue.
-- The Mutex runs it too, barging (ARGV[6]): it takes a free lock without serving the queue first.
-- KEYS[1] the lock key (its value: the holder, see fair-holder.lua)
-- KEYS[2] the fencing counter of the lock (never expires, so tokens only grow)
-- KEYS[3] the queue: a list of waiter entries, oldest first (see fair-holder.lua)
-- KEYS[4] the waiting: a hash, queued token -> its current deadline ms (server time)
-- ARGV[1] the owner token of this acquisition (the same for every attempt of one acquire call)
-- ARGV[2] the lease TTL in milliseconds
-- ARGV[3] how long this waiter's queue place lives without being renewed, in ms; 0 for a single try
--         that never queues (tryAcquire)
-- ARGV[4] the channel this waiter hears its hand-off on
-- ARGV[5] '1' when an earlier attempt of this acquire call may have queued it, else '0' (it then
--         does not look for its entry when barging into a free lock)
-- ARGV[6] '1' to take a free lock whoever is queued (Mutex), '0' to serve the queue first (FairMutex)
-- Reply: {1, fencing token, server time ms} when acquired (now, or by an earlier hand-off: the TTL is
--        then restarted, so the caller may count it from when it sent this request);
--        {0, wait bound in ms, server time ms} when queued (or not taken, with ARGV[3] 0). The wait
--        bound is the longest the caller should wait before trying again: min(the holder's time
--        left, the shortest lease TTL a waiter queued since the lock was last free asked for),
--        since any waiter ahead may be handed the lock and crash, and the caller must be awake by
--        that lock's expiry to hand it on.
-- Cost: O(1); a caller barging into a free lock after an earlier attempt queued it leaves the
-- queue, O(queue length).
-- The lock goes to the caller only when it is free and no live waiter is ahead. When it is free and
-- a live waiter is ahead (the holder expired without a release), it is handed to that waiter here.
-- Server time (TIME) keeps deadlines in one clock for every client; Redis 5+ replicates a script's
-- effects, so reading TIME before writing is allowed.
-- #include next-fence.lua
-- #include fair-holder.lua
-- #include fair-queue.lua
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local me, ttl = ARGV[1], tonumber(ARGV[2])

local holder = decode_holder(redis.call('get', KEYS[1]))
if holder and holder.token == me then
  -- Ours already (a hand-off whose message we missed, or a reply that was lost): restart the TTL.
  holder.fence = holder.fence or tonumber(redis.call('get', KEYS[2]) or '0')
  holder.expiry = now + ttl
  store_holder(KEYS[1], holder, now)
  return {1, holder.fence, now}
end

if not holder then
  -- Serve the queue: the oldest live entry gets the lock. Our own entry counts as live: we are here.
  -- A barging caller skips that: the lock is free, it is its own.
  -- (An earlier attempt of its call may have queued it: that entry goes, or a later release would
  -- hand the lock to a call that already has it.)
  local head
  if ARGV[6] ~= '1' then
    head = pop_live(KEYS[3], KEYS[4], now, nil, me)
  elseif ARGV[5] == '1' then
    leave_queue(KEYS[3], KEYS[4], me)
  end
  if not head or head.token == me then
    local fence = next_fence(KEYS[2], t)
    store_holder(KEYS[1], {
      fence = fence, expiry = now + ttl, min_ttl = 0, queue_expiry = 0, prev = '', token = me,
    }, now)
    return {1, fence, now}
  end
  holder = hand_to(KEYS[1], KEYS[2], head, nil, '', t, now)
end

local lifetime = tonumber(ARGV[3])
if lifetime > 0 then
  local deadline = now + lifetime
  -- The queue keys outlive their longest-lived entry, and no longer: an abandoned queue goes away.
  -- The holder's value remembers until when they live, and their TTL is pushed to twice the entry
  -- lifetime when an entry would outlive it (about once per lifetime), or when the list is new.
  local created = join_queue(KEYS[3], KEYS[4], me, deadline, ttl, ARGV[4])
  local refresh = created or deadline > holder.queue_expiry
  local changed = false
  if refresh then
    holder.queue_expiry = math.max(holder.queue_expiry, now + 2 * lifetime)
    for i = 3, 4 do redis.call('pexpire', KEYS[i], holder.queue_expiry - now) end
    changed = true
  end
  if holder.min_ttl == 0 or ttl < holder.min_ttl then
    holder.min_ttl = ttl
    changed = true
  end
  if changed and holder.expiry then store_holder(KEYS[1], holder, now) end
end
-- A holder whose value did not parse has no known expiry: ask the key (-1: none).
local bound = holder.expiry and math.max(0, holder.expiry - now) or redis.call('pttl', KEYS[1])
if holder.min_ttl > 0 and (bound < 0 or holder.min_ttl < bound) then bound = holder.min_ttl end
return {0, bound, now}
