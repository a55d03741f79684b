-- multi-acquire: take several Mutex locks at once, all or none (MultiMutex), or register the caller
-- to be woken when the name it waits on (one that stopped it) is released. Each name is a Mutex's
-- own lock (its key layout and holder value, holder.lua), so a Mutex and a MultiMutex on one name
-- exclude each other. The caller never joins a name's hand-off queue: a Mutex release never hands one name
-- to a MultiMutex waiter, which would then hold a part of its set while waiting for the rest.
-- Five keys per name, in the caller's order; KEYS[1..5] are the first name's, KEYS[6..10] the
-- second's, and so on (every name's keys in one slot: one server, or one hash tag on a cluster).
-- KEYS[1] the lock key (its value: the holder, see holder.lua)
-- KEYS[2] the fencing counter of the lock (never expires)
-- KEYS[3] the Mutex's queue (not read here; the release hands the name on through it)
-- KEYS[4] the Mutex's waiting hash (not read here)
-- KEYS[5] the MultiMutex waiters of the name: a hash, waiter token -> the channel it is woken on
-- ARGV[1] the owner token of this acquisition (the same for every attempt of one acquire call)
-- ARGV[2] the lease TTL in milliseconds
-- ARGV[3] how long the caller's registration as a waiter lives, in ms; 0 for a single try that
--         registers nothing (tryAcquire)
-- ARGV[4] the channel the caller is woken on ("token:free" when a name it waits on is released)
-- ARGV[5] the holder label stored with each name while this call holds it ('' for none)
-- ARGV[6] '1' when an earlier attempt of this call was sent (it may be registered on some names: they
--         are unregistered as this attempt takes or skips them), '0' for a first attempt (nothing of
--         this token's can be registered: no HDEL)
-- Reply: {1, server time ms, fencing token of each name in KEYS order...} when every name was free
--        (or already this token's: a re-sent attempt), now taken, each with its TTL restarted;
--        {0, wait bound ms, server time ms} when some name is held by another token: nothing is
--        taken; the caller is registered on one name that stopped it, the one whose holder would
--        expire last (it cannot take its names before that one is free: a release of another would
--        wake it to find this one still held), and unregistered from the others. The wait bound is
--        that holder's time left (-1: none is known). A holder's release that leaves the name free
--        wakes the caller: a MultiMutex's (multi-release.lua) and a Mutex's (hand-off-release.lua;
--        a holder whose queue was known empty is marked "not known" here, so its release looks at
--        the waiters).
-- A free name is taken whoever is queued for it, as a Mutex barges (a name freed by its holder's
-- expiry or by a quiet release may have Mutex waiters: the name's holder value keeps the queue's
-- bookkeeping, so this caller's release hands the name to them).
-- Cost: O(names), plus O(1) per registration.
-- #include server-time.lua
-- #include next-fence.lua
-- #include holder.lua
-- #include take-free.lua
local me, ttl, entry_ttl, channel, label = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
local sent_before = ARGV[6] == '1'
local n = #KEYS / 5
local now_us, now = server_time()
local holders, releases = {}, {}
-- The name it waits on: of the names held by others, the one whose holder would expire last (no
-- expiry: never), the first of them on a tie.
local pick, bound = nil, -1
for i = 1, n do
  local lock_key = KEYS[(i - 1) * 5 + 1]
  local holder, released = decode_holder(redis.call('get', lock_key))
  holders[i], releases[i] = holder, released
  if holder and holder.token ~= me then
    -- -1: no expiry (a value written by something else, without a TTL).
    local left = holder.expiry and math.max(0, holder.expiry - now) or redis.call('pttl', lock_key)
    if not pick or (bound >= 0 and (left < 0 or left > bound)) then pick, bound = i, left end
  end
end
if pick then
  for i = 1, n do
    local waiters_key = KEYS[(i - 1) * 5 + 5]
    if i == pick and entry_ttl > 0 then
      redis.call('hset', waiters_key, me, channel)
      if redis.call('pttl', waiters_key) < entry_ttl then redis.call('pexpire', waiters_key, entry_ttl) end
      -- A holder whose queue is known empty is released without looking at anything else
      -- (hand-off-release.lua's fast path): marked "not known", its release wakes this caller.
      local holder = holders[i]
      if holder.expiry and holder.queue_expiry == 0 then
        holder.queue_expiry = 1
        store_holder(KEYS[(i - 1) * 5 + 1], holder, now)
      end
    elseif sent_before then
      redis.call('hdel', waiters_key, me)
    end
  end
  return {0, bound, now}
end
local reply = {1, now}
for i = 1, n do
  local base = (i - 1) * 5
  local holder, released = holders[i], releases[i]
  if holder then
    -- Already ours (an attempt re-sent after its reply was lost): its TTL starts again.
    if holder.expiry then
      holder.expiry = now + ttl
      store_holder(KEYS[base + 1], holder, now)
    else
      redis.call('pexpire', KEYS[base + 1], ttl)
    end
    reply[i + 2] = holder.fence or tonumber(redis.call('get', KEYS[base + 2]) or '0')
  else
    local queue_expiry = released and released.queue_expiry or 1
    reply[i + 2] = take_free(KEYS[base + 1], KEYS[base + 2], 1, released, queue_expiry, me, ttl, label, now_us, now)[2]
  end
  if sent_before then redis.call('hdel', KEYS[base + 5], me) end
end
return reply
