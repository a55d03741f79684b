-- mutex-release: compare-and-delete, then wake one sleeper; or, for a caller that does not hold
-- the lock (a waiter giving up), leave the sleepers.
-- KEYS[1] the lock key
-- KEYS[2] the sleepers: a sorted set of "token|wake channel", scored by deadline (server time, ms)
-- ARGV[1] the owner token that must hold the lock
-- ARGV[2] the caller's wake channel (its sleeper entry is "ARGV[1]|ARGV[2]")
-- Reply: 1 when this token held the lock and it is now free; 0 when it was not held by this token
--        (expired, or taken over): then the lock is not touched.
-- Waking one: sleepers are popped earliest deadline first; an entry past its deadline is dropped,
-- and so is one whose PUBLISH reached nobody (its process is gone), until one is reached. The
-- woken waiter then tries like anyone else (the lock is not handed to it: this lock is not fair).
-- A waiter that gives up removes its entry and, when the lock is free, wakes the next sleeper: the
-- wake-up that was meant for it may have arrived just as it left.
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
      local member = popped[1]
      local bar = string.find(member, '|', 1, true)
      if bar and redis.call('publish', string.sub(member, bar + 1), string.sub(member, 1, bar - 1)) > 0 then
        return
      end
    end
  end
end

local owner = redis.call('get', KEYS[1])
if owner == ARGV[1] then
  redis.call('del', KEYS[1])
  wake_one()
  return 1
end
redis.call('zrem', KEYS[2], ARGV[1] .. '|' .. ARGV[2])
if not owner then wake_one() end
return 0
