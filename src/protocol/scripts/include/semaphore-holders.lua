-- semaphore-holders (included by the Semaphore scripts): the server's clock and a Semaphore's holders.
-- Holders live in a sorted set at the lock key: one member per acquisition,
-- "<permits>|<fencing token>|<owner token>" (the token last: tokens may contain any character),
-- scored by its expiry in server milliseconds (TIME), never a client's clock. The key itself expires
-- with its longest-lived holder, so an abandoned semaphore goes away by itself.
-- Anything else at the lock key (a Mutex on the same name, a foreign SET) holds every permit until
-- it expires: nothing is granted over it, and the scripts never change it.

-- Whole milliseconds of a TIME reply.
local function server_ms(t)
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Drops the holders whose expiry has passed and reads the others: {held = permits held, mine =
-- `me`'s acquisition ({member, permits, fence}) or nil}; nil when the key is not a sorted set.
-- O(holders): each holds at least one permit, so there are at most `limit` of them (more only after
-- the limit was lowered).
local function read_holders(key, now, me)
  local pruned = redis.pcall('zremrangebyscore', key, '-inf', now)
  if type(pruned) == 'table' and pruned.err then return nil end
  local held, mine = 0, nil
  for _, member in ipairs(redis.call('zrange', key, 0, -1)) do
    local permits, fence, token = string.match(member, '^(%d+)|(%d+)|(.*)$')
    if permits then
      held = held + tonumber(permits)
      if token == me then mine = {member = member, permits = tonumber(permits), fence = tonumber(fence)} end
    end
  end
  return {held = held, mine = mine}
end

-- Sets `member`'s expiry to `ttl` ms from `now`, and keeps the key alive at least that long.
local function hold_for(key, member, ttl, now)
  redis.call('zadd', key, string.format('%d', now + ttl), member)
  if redis.call('pttl', key) < ttl then redis.call('pexpire', key, ttl) end
end
