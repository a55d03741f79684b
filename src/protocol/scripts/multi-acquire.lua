-- multi-acquire: take several Mutex locks at once, all or none (MultiMutex), or register the caller
-- to be woken when the name it waits on (one that stopped it) is released. Each name is a Mutex's
-- own lock (its key layout and holder value, holder.lua), so a Mutex and a MultiMutex on one name
-- exclude each other. The caller never joins a name's hand-off queue: a Mutex release never hands one name
-- to a MultiMutex waiter, which would then hold a part of its set while waiting for the rest.
-- Six keys per name, in the caller's order; KEYS[1..6] are the first name's, KEYS[7..12] the
-- second's, and so on (every name's keys in one slot: one server, or one hash tag on a cluster).
-- KEYS[1] the lock key (its value: the holder, see holder.lua)
-- KEYS[2] the fencing counter of the lock (never expires)
-- KEYS[3] the Mutex's queue (not read here; the release hands the name on through it)
-- KEYS[4] the Mutex's waiting hash (not read here)
-- KEYS[5] the MultiMutex waiters of the name: a hash, waiter token -> the channel it is woken on
-- KEYS[6] the name's reservation (reservation.lua): the MultiMutex waiter that reserved it
-- ARGV[1] the owner token of this acquisition (the same for every attempt of one acquire call)
-- ARGV[2] the lease TTL in milliseconds
-- ARGV[3] how long the caller's registration as a waiter lives, in ms; 0 for a single try that
--         registers nothing and reserves nothing (tryAcquire)
-- ARGV[4] the channel the caller is woken on ("token:free" when a name it waits on is released)
-- ARGV[5] the holder label stored with each name while this call holds it ('' for none)
-- ARGV[6] '1' when an earlier attempt of this call was sent (it may be registered on some names: they
--         are unregistered as this attempt takes or skips them), '0' for a first attempt (nothing of
--         this token's can be registered: no HDEL)
-- ARGV[7] the server ms of this call's first attempt (its arrival), '0' for the first attempt (now)
-- ARGV[8] the hand-off-after window in ms (the MultiMutex's handOffAfterMs): a waiting call that has
--         waited this long since its arrival reserves its names (its starvation mode, below)
-- ARGV[9] how long a reservation lives unless an attempt of the call renews it, in ms
-- Reply: {1, server time ms, fencing token of each name in KEYS order...} when every name was free
--        (or already this token's: a re-sent attempt) and reserved by nobody else, now taken, each
--        with its TTL restarted; {0, wait bound ms, server time ms} when some name is held by
--        another token or reserved by another waiter: nothing is taken; the caller is registered on
--        one name that stopped it, the one whose holder (or reservation) would expire last (it
--        cannot take its names before that one is free: a release of another would wake it to find
--        this one still held), and unregistered from the others. The wait bound is that holder's
--        time left (-1: none is known). A holder's release that leaves the name free wakes the
--        caller: a MultiMutex's (multi-release.lua) and a Mutex's (hand-off-release.lua; a holder
--        whose queue was known empty is marked "not known" here, so its release looks at the
--        waiters).
-- Starvation mode: a waiting call (ARGV[3] > 0) stopped once it has waited the window reserves every
-- one of its names, all or none, in this script: none when any is reserved by an older waiter (an
-- earlier arrival; the smaller token on a tie), and then it drops those it had. A younger waiter's
-- reservation is taken over (and that waiter woken, to drop the rest of its own, unless every name
-- it reserved was taken over). While a name is
-- reserved nobody else takes it: another MultiMutex's attempt is stopped by it, a Mutex or FairMutex
-- queues behind it (hand-off-acquire.lua), and a release of it frees it for the reserver instead of
-- handing it to a Mutex waiter, waking the reserver on its channel (multi-release.lua,
-- hand-off-release.lua). The reservation goes when the reserver takes its names, gives up
-- (multi-release.lua), or is not renewed within ARGV[9] ms (a dead reserver). A reserver holds
-- nothing, and the oldest reserver's reservations are taken over by nobody: overlapping reservations
-- cannot deadlock, and the oldest due waiter gets its names once the holds in progress on them end.
-- A free name is taken whoever is queued for it, as a Mutex barges (a name freed by its holder's
-- expiry or by a quiet release may have Mutex waiters: the name's holder value keeps the queue's
-- bookkeeping, so this caller's release hands the name to them), unless another waiter reserved it.
-- Cost: O(names), plus O(1) per registration; a name whose value says "queue known empty" (the
-- uncontended case) costs a GET and a SET, as before reservations: its reservation key is not read.
-- #include server-time.lua
-- #include next-fence.lua
-- #include holder.lua
-- #include take-free.lua
-- #include notify.lua
-- #include reservation.lua
local me, ttl, entry_ttl, channel, label = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
local sent_before = ARGV[6] == '1'
local arrival, window, reserve_ttl = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local n = #KEYS / 6
local now_us, now = server_time()
if arrival <= 0 or arrival > now then arrival = now end
local due = entry_ttl > 0 and now - arrival >= window
local holders, releases, reservations, mine = {}, {}, {}, {}
-- How many of these names each other waiter reserved: one whose reservations are all taken over
-- keeps none, and is not woken for that (reservation.lua's `names`).
local reserved_here = {}
local function wake_taken_over(reservation)
  if reserved_here[reservation.token] < reservation.names then
    reserved_here[reservation.token] = reservation.names -- once
    notify(reservation.channel, reservation.token .. ':free')
  end
end
-- Whether a name is reserved by a waiter this caller does not take it over from.
local blocked = false
-- The name it waits on: of the names held by others (or reserved), the one whose holder would expire
-- last (no expiry: never), the first of them on a tie.
local pick, bound = nil, -1
for i = 1, n do
  local base = (i - 1) * 6
  local lock_key = KEYS[base + 1]
  local holder, released = decode_holder(redis.call('get', lock_key))
  holders[i], releases[i] = holder, released
  local left
  if holder and holder.token ~= me then
    -- -1: no expiry (a value written by something else, without a TTL).
    left = holder.expiry and math.max(0, holder.expiry - now) or redis.call('pttl', lock_key)
  end
  -- A reserved name's value never says "queue known empty" (reservation.lua).
  local flagged
  if holder then flagged = holder.token ~= me and holder.queue_expiry > 0
  else flagged = not released or released.queue_expiry > 0 end
  if flagged then
    local reservation = read_reservation(KEYS[base + 6])
    if reservation and reservation.token == me then
      mine[i] = true
    elseif reservation then
      reservations[i] = reservation
      reserved_here[reservation.token] = (reserved_here[reservation.token] or 0) + 1
      local older = reservation.arrival < arrival or (reservation.arrival == arrival and reservation.token < me)
      if not due or older then
        blocked = true
        local reserved_left = redis.call('pttl', KEYS[base + 6])
        if not left or (left >= 0 and reserved_left > left) then left = reserved_left end
      end
    end
  end
  if left and (not pick or (bound >= 0 and (left < 0 or left > bound))) then pick, bound = i, left end
end
if pick then
  -- All or none: it reserves every name (it is due and no older waiter reserved any), or none.
  local reserve = due and not blocked
  for i = 1, n do
    local base = (i - 1) * 6
    local lock_key, waiters_key = KEYS[base + 1], KEYS[base + 5]
    local holder, released = holders[i], releases[i]
    local flag = false
    if i == pick and entry_ttl > 0 then
      redis.call('hset', waiters_key, me, channel)
      if redis.call('pttl', waiters_key) < entry_ttl then redis.call('pexpire', waiters_key, entry_ttl) end
      -- A holder whose queue is known empty is released without looking at anything else
      -- (hand-off-release.lua's fast path): marked "not known", its release wakes this caller.
      flag = true
    elseif sent_before then
      redis.call('hdel', waiters_key, me)
    end
    if reserve then
      if reservations[i] then wake_taken_over(reservations[i]) end
      store_reservation(KEYS[base + 6], arrival, n, me, channel, reserve_ttl)
      flag = true
      -- The release record outlives the reservation (a value is kept 60 s; a reservation lives
      -- less, reservation.lua's caller caps it).
      if not holder then
        if not released then
          store_released(lock_key, tonumber(redis.call('get', KEYS[base + 2]) or '0'), '', 1)
        elseif released.queue_expiry == 0 then
          store_released(lock_key, released.fence, released.prev, 1)
        else
          redis.call('pexpire', lock_key, 60000)
        end
      end
    elseif mine[i] then
      redis.call('del', KEYS[base + 6])
    end
    if flag and holder and holder.expiry and holder.queue_expiry == 0 then
      holder.queue_expiry = 1
      store_holder(lock_key, holder, now)
    end
  end
  return {0, bound, now}
end
local reply = {1, now}
for i = 1, n do
  local base = (i - 1) * 6
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
  -- Its own reservation is done with; a younger waiter's, taken over, is woken to drop the rest.
  if mine[i] or reservations[i] then
    redis.call('del', KEYS[base + 6])
    if reservations[i] then wake_taken_over(reservations[i]) end
  end
end
return reply
