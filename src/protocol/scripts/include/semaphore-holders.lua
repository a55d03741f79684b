-- semaphore-holders: a Semaphore's holders (the Semaphore's and ReadWriteLock's scripts).
-- Needs: nothing; reads no KEYS or ARGV.
-- Provides: read_holders(key, now, me) -> the holders table, hold_for(holders, member, ttl, now),
-- holder_member(permits, fence, label, token) and decode_member(member), below.
-- Holders live in a sorted set at the lock key: one member per acquisition,
-- "<permits>|<fencing token>|<#label>|<label><owner token>" (the token last: tokens may contain any
-- character; the label is the holder's, for people reading the lock),
-- scored by its expiry in server milliseconds (TIME), never a client's clock. The key itself expires
-- with its longest-lived holder, so an abandoned semaphore goes away by itself.
-- Anything else at the lock key (a Mutex on the same name, a foreign SET) holds every permit until
-- it expires: nothing is granted over it, and the scripts never change it.

-- A holder's member, and its fields back (nil when the member is not one of ours).
local function holder_member(permits, fence, label, token)
  return string.format('%d|%d|%d|', permits, fence, #label) .. label .. token
end

local function decode_member(member)
  local permits, fence, label_len, rest = string.match(member, '^(%d+)|(%d+)|(%d+)|(.*)$')
  if not permits then return nil end
  -- Digits (the pattern says so): arithmetic converts each once, tonumber twice (server-time.lua).
  label_len = label_len + 0
  return permits + 0, fence + 0, string.sub(rest, 1, label_len), string.sub(rest, label_len + 1)
end

-- Reads the holders in one ZRANGE, dropping those whose expiry has passed (rare: a holder that
-- crashed; a release removes its own). Returns nil when the key is not a sorted set, else
-- {key, held = permits held, mine = `me`'s acquisition ({member, permits, fence, label}) or nil,
--  first = the earliest live expiry (ms, nil when none), last = the latest (0 when none)}, which
-- the other functions keep up to date. O(holders): each holds at least one permit, so there are at
-- most `limit` of them (more only after the limit was lowered).
local function read_holders(key, now, me)
  local members = redis.pcall('zrange', key, 0, -1, 'withscores')
  if members.err then return nil end
  local holders = {key = key, held = 0, last = 0}
  for i = 1, #members, 2 do
    local member, expiry = members[i], members[i + 1] + 0
    local permits, fence, label, token = decode_member(member)
    if expiry <= now then
      redis.call('zrem', key, member)
    elseif permits then
      holders.held = holders.held + permits
      holders.first = holders.first or expiry
      holders.last = expiry
      if token == me then holders.mine = {member = member, permits = permits, fence = fence, label = label} end
    end
  end
  return holders
end

-- Sets `member`'s expiry to `ttl` ms from `now`; the key lives as long as its latest holder (it is
-- pushed out only when this one is the latest, so no PTTL is read).
local function hold_for(holders, member, ttl, now)
  local expiry = now + ttl
  redis.call('zadd', holders.key, string.format('%d', expiry), member)
  if expiry > holders.last then
    redis.call('pexpire', holders.key, ttl)
    holders.last = expiry
  end
  if not holders.first or expiry < holders.first then holders.first = expiry end
end
