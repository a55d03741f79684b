-- hand-off-release (included by fair-release.lua and reentrant-release.lua; needs next-fence.lua,
-- fair-holder.lua and fair-queue.lua before it): release a hand-off lock by handing it straight to
-- the oldest live waiter, or leave its queue. Reads the first five keys and the first four
-- arguments as fair-release.lua's header names them (the third and fourth only when given);
-- returns fair-release's reply. `holder` is the decoded
-- lock value (nil when free).
local function release_or_leave(holder)
  local me = ARGV[1]
  if holder and holder.token == me then
    local t = redis.call('time')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    if not hand_on(KEYS[1], KEYS[2], KEYS[3], KEYS[4], holder, me, t, now, ARGV[2] == '1') then
      redis.call('del', KEYS[1])
      redis.call('set', KEYS[5], me, 'PX', 60000)
      -- Announce a release that frees the lock, for waiters that do not queue (a Redlock quorum's),
      -- when the caller names a channel (ARGV[3]; a script without it passes nothing). pcall: an ACL
      -- user without channel permissions still releases.
      if ARGV[3] and ARGV[3] ~= '' then
        -- ARGV[4], when given, is the message instead of the token (a Redlock give-back's).
        local message = (ARGV[4] and ARGV[4] ~= '') and ARGV[4] or me
        redis.pcall('publish', ARGV[3], message)
      end
    end
    return 1
  end
  if holder and holder.prev == me then return 1 end
  if redis.call('get', KEYS[5]) == me then return 1 end
  leave_queue(KEYS[3], KEYS[4], me)
  if not holder then
    -- A lock found free (its holder expired) with live waiters queued goes to the oldest of them.
    local t = redis.call('time')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    hand_on(KEYS[1], KEYS[2], KEYS[3], KEYS[4], nil, me, t, now, ARGV[2] == '1')
  end
  return 0
end
