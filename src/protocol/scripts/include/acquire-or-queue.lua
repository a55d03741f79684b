-- acquire-or-queue (included by hand-off-acquire.lua and reentrant-acquire.lua; needs next-fence.lua,
-- holder.lua, a queue (arrival-queue.lua or placed-line.lua) and grant-waiter.lua before it): take a
-- hand-off lock in strict (arrival or place) order, or
-- barging into a free one, or join (or renew a place in) its queue. Reads the first four keys and
-- the first six arguments as hand-off-acquire.lua's header names them; returns hand-off-acquire's reply.
-- `holder` is the decoded lock value (nil when free), `t` a TIME reply and `now` its ms.
local function acquire_or_queue(holder, t, now)
  local me, ttl = ARGV[1], tonumber(ARGV[2])
  if holder and holder.token == me then
    -- Ours already (a hand-off whose message we missed, or a reply that was lost): restart the TTL.
    holder.fence = holder.fence or tonumber(redis.call('get', KEYS[2]) or '0')
    holder.expiry = now + ttl
    store_holder(KEYS[1], holder, now)
    return {1, holder.fence, now}
  end

  if not holder then
    -- Serve the queue: the oldest live entry gets the lock. Our own entry counts as live: we are
    -- here. A barging caller skips that: the lock is free, it is its own.
    -- (An earlier attempt of its call may have queued it: that entry goes, or a later release would
    -- hand the lock to a call that already has it.) A caller new to the queue also barges while
    -- the first waiter has not yet waited its turn out (a Redlock line's hand-off-after window;
    -- never, for a FairMutex's queue).
    local head
    local barging = ARGV[6] == '1' or (ARGV[5] ~= '1' and first_not_due(KEYS[3], now) ~= nil)
    if not barging then
      head = pop_live(KEYS[3], KEYS[4], now, nil, me)
      -- A queue that skips waiters nobody hears (a Redlock line's: a waiter that gave up while a
      -- server was away is still in that server's line) hands the lock to the next one instead.
      while head and head.token ~= me do
        holder = grant_waiter(KEYS[1], KEYS[2], head, nil, '', t, now, hand_off_skips_unreached)
        if holder then break end
        head = pop_live(KEYS[3], KEYS[4], now, nil, me)
      end
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
  end

  local lifetime = tonumber(ARGV[3])
  if lifetime > 0 then
    local deadline = now + lifetime
    -- The queue keys outlive their longest-lived entry, and no longer: an abandoned queue goes
    -- away. The holder's value remembers until when they live, and their TTL is pushed to twice
    -- the entry lifetime when an entry would outlive it (about once per lifetime), or when the
    -- list is new.
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
end
