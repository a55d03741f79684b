-- placed-line (included by the RedlockMutex's scripts, before grant-waiter.lua): arrival-queue.lua's
-- interface (pop_live, join_queue, leave_queue) over a line in which each waiter brings its own
-- place, so that every server of a Redlock quorum keeps its waiters in the same order.
-- A FairMutex's queue is in arrival order; two waiters that join several servers at nearly the same
-- time arrive in different orders on different servers, and each server would hand the lock to a
-- different one: a split vote in which nobody holds a quorum. Here the order is the waiter's place
-- (its client's wall clock, ms, when its acquire call first joined; the same number on every
-- server), ties broken by token, so the servers agree on who is next whenever they know the same
-- waiters. A client clock that is off only moves its waiters in the line; it never makes two holders.
-- The line: a sorted set, token -> place. The waiting hash: token -> "<deadline ms>|<lease TTL ms>|
-- <#channel>|<channel>" (the deadline is renewed by each attempt; an entry past it is dropped).
-- `ordered_place` is the place join_queue gives a new entry: the including script sets it from its
-- arguments after this include.
local ordered_place = 0
-- How long the first waiter lets a release free the lock instead of handing it over, in ms (0:
-- every release hands over): set by the including script. Until its place is that old, a release
-- frees the lock and a caller new to the line (the releaser asking again) may take it, so a busy
-- holder keeps the lock in its own process for a while instead of a hand-off to another process
-- per acquisition; from then on the waiter is served first. The waiter wakes by itself when its
-- window ends (no message: a free lock it was not handed is no news before that).
local ordered_hand_off_after_ms = 0
-- A lock found free is not handed to a waiter whose hand-off message reaches nobody: every Redlock
-- waiter listens while it waits, and one that gave up while this server was away is still in its
-- line (it rejoins at the same place at its next attempt if it was only reconnecting).
local hand_off_skips_unreached = true

local function decode_waiting(token, raw)
  local deadline, ttl, channel_len, rest = string.match(raw, '^(%d+)|(%d+)|(%d+)|(.*)$')
  if not deadline then return nil end
  return {
    deadline = tonumber(deadline), ttl = tonumber(ttl),
    channel = string.sub(rest, 1, tonumber(channel_len)), token = token,
  }
end

-- Takes entries off the front of the line until a live one (as arrival-queue.lua's pop_live: entries
-- of `skip` and dead ones are dropped; an entry of `mine` counts as live).
local function pop_live(queue, waiting, now, skip, mine)
  while true do
    local token = redis.call('zrange', queue, 0, 0)[1]
    if not token then return nil end
    redis.call('zrem', queue, token)
    local raw = redis.call('hget', waiting, token)
    if raw then
      redis.call('hdel', waiting, token)
      local entry = decode_waiting(token, raw)
      if entry and token ~= skip and (token == mine or entry.deadline >= now) then return entry end
    end
  end
end

-- Puts `token` in the line at `ordered_place`, or renews its deadline when it is there already.
-- Returns true when the line was created by this call (it has no TTL yet).
local function join_queue(queue, waiting, token, deadline, ttl, channel)
  local value = string.format('%d|%d|%d|', deadline, ttl, #channel) .. channel
  if redis.call('hset', waiting, token, value) == 0 then return false end
  redis.call('zadd', queue, ordered_place, token)
  return redis.call('zcard', queue) == 1
end

-- Takes `token` out of the line (a waiter giving up): O(log line length).
local function leave_queue(queue, waiting, token)
  if redis.call('hdel', waiting, token) == 0 then return end
  redis.call('zrem', queue, token)
end

-- The caller's wall clock (ms), which the including script sets: the first waiter's place is
-- measured against it rather than against this server's clock, so that every server of the quorum,
-- sent the same number, agrees on whether the first waiter is due (servers that disagreed split the
-- vote between the waiter and a caller taking the lock ahead of it).
local ordered_caller_now_ms = 0

-- The first waiter's token while it has waited less than `ordered_hand_off_after_ms` (its place,
-- its client's wall clock, against the caller's: a clock that is off only moves its turn); nil
-- when it is due, or when nobody waits.
local function first_not_due(queue, now)
  if ordered_hand_off_after_ms <= 0 then return nil end
  local first = redis.call('zrange', queue, 0, 0, 'WITHSCORES')
  if first[1] and tonumber(first[2]) + ordered_hand_off_after_ms > ordered_caller_now_ms then
    return first[1]
  end
  return nil
end
