-- holder: a hand-off lock's key's value (the Mutex's, FairMutex's, ReentrantMutex's and each
-- RedlockMutex server's), which carries what the hot path would otherwise read from other keys, so
-- an uncontended acquire and release read no key but this one.
-- Needs: nothing; reads no KEYS or ARGV.
-- Provides: decode_holder(value) -> the holder table below (nil for a free lock), and, for a lock
-- freed by a release, the release table below as a second result; store_holder(key, holder, now)
-- and store_released(key, fence, releaser, queue_expiry) write them; free_holder(key, fence_key,
-- holder, queue_expiry) frees the lock `holder` holds (its token the releaser).
-- Value: "<fencing token>|<expiry ms>|<min waiter TTL ms>|<queue expiry ms>|<#prev>|<#label>|<prev>
-- <label><owner>"
--   fencing token    the holder's (the counter key holds the same; a hand-off needs no GET of it)
--   expiry ms        server time the key expires at (kept equal to its PX; saves a PTTL per wait)
--   min waiter TTL   the shortest lease TTL any waiter queued since the lock was last free asked
--                    for (0 when none), for the wait bound (saves reading every entry)
--   queue expiry     0 when the queue is known to be empty (nobody queued since a release found it
--                    empty), so a release neither reads the clock nor pops it; else a server time
--                    the queue and waiting keys live until, at least (1: not known), so their TTL is
--                    refreshed once per window rather than by every waiter
--   prev             the token that handed the lock to this holder, or that freed it last (a
--                    release re-sent after its reply was lost finds it here: no tombstone key)
--   label            the holder's label (its lease's `label` option: host and PID by default),
--                    for people reading the lock (inspect, the CLI); '' for none
--   owner            the holder's owner token, last: tokens may contain any character.
-- A release that hands the lock to nobody leaves the same fields with an empty owner (a release):
-- the fencing token is the counter's (so the next acquire needs no GET of it), expiry 0, prev the
-- releaser, kept 60 s. A value that does not parse (written by something else) is an owner token
-- with nothing known.
local function decode_holder(value)
  if not value then return nil end
  local fence, expiry, min_ttl, queue_expiry, prev_len, label_len, rest =
    string.match(value, '^(%d+)|(%d+)|(%d+)|(%d+)|(%d+)|(%d+)|(.*)$')
  if not fence then return {token = value, min_ttl = 0, queue_expiry = 1, prev = '', label = ''} end
  -- The fields are digits (the pattern says so): arithmetic converts each once, where tonumber
  -- would run the C conversion twice (a release and an acquire decode a value each).
  prev_len, label_len = prev_len + 0, label_len + 0
  local decoded = {
    fence = fence + 0, expiry = expiry + 0, min_ttl = min_ttl + 0,
    queue_expiry = queue_expiry + 0, prev = string.sub(rest, 1, prev_len),
    label = string.sub(rest, prev_len + 1, prev_len + label_len),
    token = string.sub(rest, prev_len + label_len + 1),
  }
  if decoded.token == '' then return nil, decoded end
  return decoded
end

-- Writes `holder` to the lock key, expiring at holder.expiry (server ms; `now` is the current one).
local function store_holder(key, holder, now)
  local value = string.format('%d|%d|%d|%d|%d|%d|', holder.fence, holder.expiry, holder.min_ttl,
    holder.queue_expiry, #holder.prev, #holder.label) .. holder.prev .. holder.label
  redis.call('set', key, value .. holder.token, 'PX', math.max(1, holder.expiry - now))
end

-- Frees the lock: a release with `fence` (the counter's value), kept 60 s.
local function store_released(key, fence, releaser, queue_expiry)
  local value = string.format('%d|0|0|%d|%d|0|', fence, queue_expiry, #releaser) .. releaser
  redis.call('set', key, value, 'PX', '60000') -- a string: Redis would format a number with %.17g
end

-- Frees the lock `holder` holds: a release by its token, with its fencing token (the counter's, read
-- only for a value that did not parse).
local function free_holder(key, fence_key, holder, queue_expiry)
  store_released(key, holder.fence or tonumber(redis.call('get', fence_key) or '0'), holder.token, queue_expiry)
end
