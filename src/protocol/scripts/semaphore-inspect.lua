-- semaphore-inspect: read a Semaphore's state in one round trip, changing nothing.
-- KEYS[1] the holders: a sorted set at the lock key (see include/semaphore-holders.lua)
-- KEYS[2] the fencing counter
-- KEYS[3] the queue of waiter tokens
-- KEYS[4] the limit stored by setLimit
-- ARGV[1] the caller's `limit` option, reported when no limit is stored
-- Reply: {limit in force, last fencing token handed out (0 when none), number of queued entries
--         (live or not yet dropped), the value at the lock key when it is not a semaphore's ('' when
--         it is one, or absent), that key's PTTL in ms (-2 when absent), then for each live holder,
--         earliest expiry first: owner token, permits, fencing token, ms left (server time), label}
-- #include server-time.lua
-- #include semaphore-holders.lua
local _, now = server_time()
local reply = {
  tonumber(redis.call('get', KEYS[4]) or ARGV[1]), tonumber(redis.call('get', KEYS[2]) or '0'),
  redis.call('llen', KEYS[3]), '', redis.call('pttl', KEYS[1]),
}
local kind = redis.call('type', KEYS[1]).ok
if kind == 'string' then
  reply[4] = redis.call('get', KEYS[1])
elseif kind == 'zset' then
  local members = redis.call('zrangebyscore', KEYS[1], '(' .. string.format('%d', now), '+inf', 'withscores')
  for i = 1, #members, 2 do
    local permits, fence, label, token = decode_member(members[i])
    if permits then
      for _, field in ipairs({token, permits, fence, tonumber(members[i + 1]) - now, label}) do
        reply[#reply + 1] = field
      end
    end
  end
end
return reply
