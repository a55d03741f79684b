-- mutex-release: compare-and-delete, then wake one sleeper; or, for a caller that does not hold
-- the lock (a waiter giving up), leave the sleepers.
-- KEYS[1] the lock key
-- KEYS[2] the sleepers: a sorted set of "token|lease TTL ms|wake channel", scored by deadline
--         (server time, ms)
-- KEYS[3] the release tombstone: the last token that released this lock, kept 60 s
-- ARGV[1] the owner token that must hold the lock
-- ARGV[2] the caller's wake channel (its sleeper entry is "ARGV[1]|<its TTL>|ARGV[2]")
-- Reply: 1 when this token held the lock and it is now free, or when this token is the one that
--        released it last (a release re-sent after its reply was lost: it did release); 0 when it
--        was not held by this token (expired, or taken over): then the lock is not touched.
-- Waking one: sleepers are popped earliest deadline first; an entry past its deadline is dropped,
-- and so is one whose PUBLISH reached nobody (its process is gone), until one is reached. The
-- woken waiter then tries like anyone else (the lock is not handed to it: this lock is not fair).
-- A PUBLISH that is refused (an ACL user without channel permissions) ends the wake-up: every
-- other would be refused too, and the lock is already released, so the script must not fail;
-- waiters then wake by their wait bound.
-- A waiter that gives up removes its entry (O(sleepers): its TTL is not known here, so its entry
-- is found by token and channel) and, when the lock is free, wakes the next sleeper: the wake-up
-- that was meant for it may have arrived just as it left.
local function wake_one()
  local now
  while true do
    local popped = redis.call('zpopmin', KEYS[2])
    if #popped == 0 then return end
    if not now then
      local t = redis.call('time')
      now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    if tonumber(popped[2]) >= now then
      local token, channel = string.match(popped[1], '^([^|]*)|%d+|(.*)$')
      if token then
        local reached = redis.pcall('publish', channel, token)
        if type(reached) ~= 'number' or reached > 0 then return end
      end
    end
  end
end

local owner = redis.call('get', KEYS[1])
if owner == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call('set', KEYS[3], ARGV[1], 'PX', 60000)
  wake_one()
  return 1
end
if redis.call('get', KEYS[3]) == ARGV[1] then return 1 end
local head, tail = ARGV[1] .. '|', '|' .. ARGV[2]
for _, member in ipairs(redis.call('zrange', KEYS[2], 0, -1)) do
  if string.sub(member, 1, #head) == head and string.sub(member, -#tail) == tail then
    redis.call('zrem', KEYS[2], member)
  end
end
if not owner then wake_one() end
return 0
