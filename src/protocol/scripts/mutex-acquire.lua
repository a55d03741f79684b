-- mutex-acquire: take a free lock with a lease and hand out the next fencing token; when it is
-- taken, register the caller as a sleeper that a release will wake (one sleeper per release).
-- KEYS[1] the lock key (holds the owner token while locked)
-- KEYS[2] the fencing counter of the lock (never expires, so tokens only grow)
-- KEYS[3] the sleepers: a sorted set of "token|lease TTL ms|wake channel", scored by the entry's
--         deadline (server time, ms); entries past their deadline are dropped when met
-- ARGV[1] the owner token of this acquisition (the same for every attempt of one acquire call)
-- ARGV[2] the lease TTL in milliseconds (the same for every attempt of one acquire call)
-- ARGV[3] how long the sleeper entry lives, in ms; 0 never registers (a single try)
-- ARGV[4] the channel this caller is woken on
-- ARGV[5] '1' when an earlier attempt of this acquisition may have registered it, else '0'
-- Reply: {1, fencing token} when acquired; {0, wait bound in ms} when not: the longest the caller
--        should sleep before trying again, min(the holder's PTTL, the shortest lease TTL of the other
--        live sleepers), since a release may wake one of them, which may take the lock and crash:
--        the caller must be awake by that lock's expiry. -1 when neither bounds it (a holder without
--        expiry and no other sleeper). Costs O(live sleepers) when not acquired.
-- An attempt whose reply was lost and that is sent again finds its own token: it is acquired, with
-- the TTL restarted and the fencing token it was given, so a lost reply never makes a client wait
-- for its own lock to expire.
-- #include next-fence.lua
local me = ARGV[1] .. '|' .. ARGV[2] .. '|' .. ARGV[4]
local owner = redis.call('get', KEYS[1])
if not owner then
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
  if ARGV[5] == '1' then redis.call('zrem', KEYS[3], me) end
  return {1, next_fence(KEYS[2])}
end
if owner == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {1, tonumber(redis.call('get', KEYS[2]) or '0')}
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lifetime = tonumber(ARGV[3])
if lifetime > 0 then
  redis.call('zadd', KEYS[3], string.format('%d', now + lifetime), me)
  -- The set outlives its longest-lived entry, and no longer: an abandoned set goes away.
  if redis.call('pttl', KEYS[3]) < lifetime then redis.call('pexpire', KEYS[3], lifetime) end
end
local bound = redis.call('pttl', KEYS[1])
for _, member in ipairs(redis.call('zrangebyscore', KEYS[3], string.format('%d', now), '+inf')) do
  local ttl = tonumber(string.match(member, '^[^|]*|(%d+)|'))
  if member ~= me and ttl and (bound < 0 or ttl < bound) then bound = ttl end
end
return {0, bound}
