-- arrival-queue: a hand-off lock's queue in arrival order (the Mutex's, FairMutex's and
-- ReentrantMutex's), as a queue table of the interface grant-waiter.lua names. placed-line.lua
-- builds the same interface over a RedlockMutex's line: a change to it is a change to both.
-- Needs: nothing; reads no KEYS or ARGV.
-- Provides: arrival_queue(queue_key, waiting_key, hand_off_after_ms, quiet) -> the queue table (one
-- per script run; its functions take it as `q`), where hand_off_after_ms (nil or 0: every release
-- hands over, as a FairMutex's) is how long the first waiter lets a release free the lock and wake it
-- instead of handing it over (the Mutex's `handOffAfterMs`): its age is counted from its arrival;
-- `quiet` (true: such a release wakes nobody, q.quiet) is for a releaser that wakes it later itself.
-- The queue is a list of entries "<arrival ms>|<deadline ms>|<lease TTL ms>|<#channel>|<#label>|
-- <channel><label><token>" (the token last: tokens may contain any character), oldest first. The
-- arrival is the server time the waiter's acquire call first joined the queue: an entry queued again
-- by the same call (its earlier one was dropped) brings it back, so the call keeps its age. The
-- label is the waiter's, for the holder's value when it is handed the lock (holder.lua).
-- The waiting hash (token -> current deadline ms) says who is queued: a re-sent enqueue (a client
-- re-sends an unanswered command after a reconnect) finds itself there and does not queue twice,
-- and an entry whose token is not in it (its waiter left) is never handed the lock. An entry's
-- own deadline is the one it was queued with; a renewal moves only the hash's, which is read just
-- for entries past their own.
local arrival_queue
do
  local function decode_entry(raw)
    local arrival, deadline, ttl, channel_len, label_len, rest =
      string.match(raw, '^(%d+)|(%d+)|(%d+)|(%d+)|(%d+)|(.*)$')
    if not arrival then return nil end
    -- Digits (the pattern says so): arithmetic converts each once, tonumber twice (server-time.lua).
    channel_len, label_len = channel_len + 0, label_len + 0
    return {
      arrival = arrival + 0, deadline = deadline + 0, ttl = ttl + 0, channel = string.sub(rest, 1, channel_len),
      label = string.sub(rest, channel_len + 1, channel_len + label_len),
      token = string.sub(rest, channel_len + label_len + 1),
    }
  end

  -- Pops entries until a live one: still a member, its deadline (or renewed deadline) not passed.
  -- Entries of `skip` are dropped; an entry of `mine` is returned as is. Dead entries are dropped.
  local function pop_live(q, now, skip, mine)
    while true do
      local raw = redis.call('lpop', q.key)
      if not raw then return nil end
      local entry = decode_entry(raw)
      if entry then
        local deadline = entry.deadline
        if deadline < now and entry.token ~= mine then
          deadline = tonumber(redis.call('hget', q.waiting, entry.token) or '0')
        end
        local member = redis.call('hdel', q.waiting, entry.token) == 1
        if member and entry.token ~= skip and (entry.token == mine or deadline >= now) then
          return entry
        end
      end
    end
  end

  -- Queues `token` (a first attempt, or a later one), or renews its place when it is queued already
  -- (its entry, and so its arrival, are kept). `arrival`: the server ms its call first joined.
  local function join(q, token, deadline, ttl, channel, label, arrival)
    local at = string.format('%d', deadline)
    if redis.call('hsetnx', q.waiting, token, at) == 0 then
      redis.call('hset', q.waiting, token, at)
      return false
    end
    local entry = string.format('%d|%d|%d|%d|%d|', arrival, deadline, ttl, #channel, #label) .. channel .. label
    return redis.call('rpush', q.key, entry .. token) == 1
  end

  -- Removes `token`'s entry (a waiter giving up, or one that took a free lock): O(1) for the first
  -- entry (a woken waiter), else O(queue length). True when `token` was queued.
  local function leave(q, token)
    if redis.call('hdel', q.waiting, token) == 0 then return false end
    local first = redis.call('lindex', q.key, 0)
    local entry = first and decode_entry(first)
    if entry and entry.token == token then
      redis.call('lpop', q.key)
      return true
    end
    for _, raw in ipairs(redis.call('lrange', q.key, 0, -1)) do
      local entry = decode_entry(raw)
      if entry and entry.token == token then
        redis.call('lrem', q.key, 1, raw)
        return true
      end
    end
    return true
  end

  -- The first live entry while it has waited less than `q.hand_off_after_ms` since its arrival;
  -- nil when it is due, or nobody waits (without a window, at once: the first waiter is always due).
  -- Dead entries (and `skip`'s) at the front are dropped on the way, as pop_live drops them.
  local function first_not_due(q, now, skip)
    if q.hand_off_after_ms <= 0 then return nil end
    while true do
      local raw = redis.call('lindex', q.key, 0)
      if not raw then return nil end
      local entry = decode_entry(raw)
      local current = entry and redis.call('hget', q.waiting, entry.token)
      if current and entry.token ~= skip and math.max(entry.deadline, tonumber(current)) >= now then
        if now - entry.arrival < q.hand_off_after_ms then return entry end
        return nil
      end
      redis.call('lpop', q.key)
      if current then redis.call('hdel', q.waiting, entry.token) end
    end
  end

  arrival_queue = function(queue_key, waiting_key, hand_off_after_ms, quiet)
    -- A lock found free is handed to the first live entry even when its hand-off message reaches
    -- nobody (its subscriber may be reconnecting; the lock kind's own release decides otherwise).
    -- A first waiter not yet due is woken by a release that frees the lock ("token:free"), unless
    -- the release is `quiet`: its client wakes that waiter itself a moment later, only if it did not
    -- take the lock back (a wake per barging release was a futile attempt per acquisition).
    return {
      key = queue_key, waiting = waiting_key, skips_unreached = false,
      hand_off_after_ms = hand_off_after_ms or 0, wakes_first = not quiet, quiet = quiet == true,
      pop_live = pop_live, join = join, leave = leave, first_not_due = first_not_due,
    }
  end
end
