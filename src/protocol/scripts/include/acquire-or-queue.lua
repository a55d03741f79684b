-- acquire-or-queue: take a hand-off lock in strict (arrival or place) order, or barging into a free
-- one, or join (or renew a place in) its queue (hand-off-, reentrant- and redlock-acquire.lua).
-- Needs: store_holder (holder.lua), take_free (take-free.lua), grant_waiter (grant-waiter.lua);
-- reads no KEYS or ARGV: the script passes them.
-- Provides: acquire_or_queue(lock, holder, released, args, label, now_us, now, arrival) ->
-- hand-off-acquire.lua's reply.
-- `lock` is hand_off_lock's table, `holder` and `released` what decode_holder returned for the lock
-- key (holder nil when free; released, the release that freed it, when known), `args` the arguments as
-- hand-off-acquire.lua's header names them (the first six), `label` the caller's (holder.lua),
-- `now_us`, `now` what server_time returned, `arrival` the server ms the caller's call first joined the
-- queue (nil or 0: unknown, it joins now; never later than now), for a new entry (arrival-queue.lua).
local function acquire_or_queue(lock, holder, released, args, label, now_us, now, arrival)
  local me, ttl, queue = args[1], tonumber(args[2]), lock.queue
  if holder and holder.token == me then
    -- Ours already (a hand-off whose message we missed, or a reply that was lost): restart the TTL.
    holder.fence = holder.fence or tonumber(redis.call('get', lock.fence) or '0')
    holder.expiry = now + ttl
    store_holder(lock.key, holder, now)
    return {1, holder.fence, now}
  end

  if not holder then
    -- Serve the queue: the oldest live entry gets the lock. Our own entry counts as live: we are
    -- here. A barging caller skips that: the lock is free, it is its own.
    -- (An earlier attempt of its call may have queued it: that entry goes, or a later release would
    -- hand the lock to a call that already has it.) A caller new to the queue also barges while
    -- the first waiter has not yet waited its turn out (a Redlock line's hand-off-after window;
    -- never, for a FairMutex's queue). A queue the last release found empty is not read at all.
    local queue_expiry = released and released.queue_expiry or 1
    local prev = released and released.prev or ''
    local head
    if queue_expiry > 0 then
      local barging = args[6] == '1' or (args[5] ~= '1' and queue:first_not_due(now) ~= nil)
      if not barging then
        head = queue:pop_live(now, nil, me)
        if not head then queue_expiry = 0 end
        -- A queue that skips waiters nobody hears (a Redlock line's: a waiter that gave up while a
        -- server was away is still in that server's line) hands the lock to the next one instead.
        while head and head.token ~= me do
          holder = grant_waiter(lock, head, released, prev, now_us, now, queue.skips_unreached)
          if holder then break end
          head = queue:pop_live(now, nil, me)
        end
      elseif args[5] == '1' then
        queue:leave(me)
      end
    end
    if not head or head.token == me then
      return take_free(lock.key, lock.fence, lock.fence_step_us, released, queue_expiry, me, ttl, label, now_us, now)
    end
  end

  local lifetime = tonumber(args[3])
  if lifetime > 0 then
    local deadline = now + lifetime
    -- The queue keys outlive their longest-lived entry, and no longer: an abandoned queue goes
    -- away. The holder's value remembers until when they live, and their TTL is pushed to twice
    -- the entry lifetime when an entry would outlive it (about once per lifetime), or when the
    -- list is new.
    if not arrival or arrival <= 0 or arrival > now then arrival = now end
    local created = queue:join(me, deadline, ttl, args[4], label, arrival)
    local refresh = created or deadline > holder.queue_expiry
    local changed = false
    if refresh then
      holder.queue_expiry = math.max(holder.queue_expiry, now + 2 * lifetime)
      redis.call('pexpire', queue.key, holder.queue_expiry - now)
      redis.call('pexpire', queue.waiting, holder.queue_expiry - now)
      changed = true
    end
    if holder.min_ttl == 0 or ttl < holder.min_ttl then
      holder.min_ttl = ttl
      changed = true
    end
    if changed and holder.expiry then store_holder(lock.key, holder, now) end
  end
  -- A holder whose value did not parse has no known expiry: ask the key (-1: none).
  local bound = holder.expiry and math.max(0, holder.expiry - now) or redis.call('pttl', lock.key)
  if holder.min_ttl > 0 and (bound < 0 or holder.min_ttl < bound) then bound = holder.min_ttl end
  return {0, bound, now}
end
