-- placed-line: a RedlockMutex server's line, in which each waiter brings its own place, as a queue
-- table of the interface grant-waiter.lua names (arrival-queue.lua builds the same for the
-- single-server locks), so that every server of a Redlock quorum keeps its waiters in the same order.
-- Needs: nothing; reads no KEYS or ARGV.
-- Provides: placed_line(line_key, waiting_key, place, hand_off_after_ms, caller_now_ms, tolerance_ms) -> the
-- queue table (one per script run; its functions take it as `q`), where
--   place              is the place q:join gives a new entry (the including script works it out from
--                      its arguments; nil in a script that never joins);
--   hand_off_after_ms  is how long the first waiter lets a release free the lock instead of handing
--                      it over, in ms (0: every release hands over). Until its place is that old, a
--                      release frees the lock and a caller new to the line (the releaser asking
--                      again) may take it, so a busy holder keeps the lock in its own process for a
--                      while instead of a hand-off to another process per acquisition; from then on
--                      the waiter is served first. The waiter wakes by itself when its window ends
--                      (no message: a free lock it was not handed is no news before that);
--   caller_now_ms      is the caller's wall clock (ms): the first waiter's place is measured against
--                      it rather than against this server's clock, so that every server of the
--                      quorum, sent the same number, agrees on whether the first waiter is due
--                      (servers that disagreed split the vote between the waiter and a caller taking
--                      the lock ahead of it);
--   tolerance_ms       how far caller_now_ms may be from this server's clock: further off, it is moved
--                      to that bound, as a place is (redlock-acquire.lua). Unclamped, a caller whose
--                      clock was far behind saw no waiter as due, so its releases freed the lock and its
--                      own next caller took it, for as long as it kept busy; now a clock that is off
--                      moves the waiter's turn by at most this much (an honest clock's number is kept
--                      as sent, so the servers still agree).
-- A FairMutex's queue is in arrival order; two waiters that join several servers at nearly the same
-- time arrive in different orders on different servers, and each server would hand the lock to a
-- different one: a split vote in which nobody holds a quorum. Here the order is the waiter's place
-- (its client's wall clock, ms, when its acquire call first joined; the same number on every
-- server), ties broken by token, so the servers agree on who is next whenever they know the same
-- waiters. A client clock that is off only moves its waiters in the line; it never makes two holders.
-- The line: a sorted set, token -> place. The waiting hash: token -> "<deadline ms>|<lease TTL ms>|
-- <#channel>|<channel><label>" (the deadline is renewed by each attempt; an entry past it is
-- dropped; the label is the waiter's, holder.lua).
local placed_line
do
  local function decode_waiting(token, raw)
    local deadline, ttl, channel_len, rest = string.match(raw, '^(%d+)|(%d+)|(%d+)|(.*)$')
    if not deadline then return nil end
    channel_len = channel_len + 0 -- digits: converted once (server-time.lua)
    return {
      deadline = deadline + 0, ttl = ttl + 0, channel = string.sub(rest, 1, channel_len),
      label = string.sub(rest, channel_len + 1), token = token,
    }
  end

  -- Takes entries off the front of the line until a live one (as arrival-queue.lua's pop_live:
  -- entries of `skip` and dead ones are dropped; an entry of `mine` counts as live).
  local function pop_live(q, now, skip, mine)
    while true do
      local token = redis.call('zrange', q.key, 0, 0)[1]
      if not token then return nil end
      redis.call('zrem', q.key, token)
      local raw = redis.call('hget', q.waiting, token)
      if raw then
        redis.call('hdel', q.waiting, token)
        local entry = decode_waiting(token, raw)
        if entry and token ~= skip and (token == mine or entry.deadline >= now) then return entry end
      end
    end
  end

  -- Puts `token` in the line at `q.place`, or renews its deadline when it is there already.
  local function join(q, token, deadline, ttl, channel, label)
    local value = string.format('%d|%d|%d|', deadline, ttl, #channel) .. channel .. label
    if redis.call('hset', q.waiting, token, value) == 0 then return false end
    redis.call('zadd', q.key, q.place, token)
    return redis.call('zcard', q.key) == 1
  end

  -- Takes `token` out of the line (a waiter giving up): O(log line length). True when it was there.
  local function leave(q, token)
    if redis.call('hdel', q.waiting, token) == 0 then return false end
    redis.call('zrem', q.key, token)
    return true
  end

  -- The first waiter ({token}) while it has waited less than `q.hand_off_after_ms` (its place, its
  -- client's wall clock, against the caller's, within the tolerance of this server's `now`: a clock
  -- that is off only moves its turn, by that much at most); nil when it is due, or when nobody
  -- waits. (`skip` is not looked at: the line is not read further.)
  local function first_not_due(q, now, skip)
    if q.hand_off_after_ms <= 0 then return nil end
    local first = redis.call('zrange', q.key, 0, 0, 'WITHSCORES')
    local caller_now = math.min(math.max(q.caller_now_ms, now - q.tolerance_ms), now + q.tolerance_ms)
    if first[1] and tonumber(first[2]) + q.hand_off_after_ms > caller_now then
      return {token = first[1]}
    end
    return nil
  end

  placed_line = function(line_key, waiting_key, place, hand_off_after_ms, caller_now_ms, tolerance_ms)
    -- A lock found free is not handed to a waiter whose hand-off message reaches nobody: every
    -- Redlock waiter listens while it waits, and one that gave up while this server was away is
    -- still in its line (it rejoins at the same place at its next attempt if it was only
    -- reconnecting).
    return {
      -- Its first waiter is not woken while not yet due: it wakes by itself when its window ends.
      key = line_key, waiting = waiting_key, skips_unreached = true, wakes_first = false, place = place,
      hand_off_after_ms = hand_off_after_ms, caller_now_ms = caller_now_ms, tolerance_ms = tolerance_ms,
      pop_live = pop_live, join = join, leave = leave, first_not_due = first_not_due,
    }
  end
end
