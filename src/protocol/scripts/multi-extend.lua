-- multi-extend: compare-and-extend every name a MultiMutex holds, all or none: extends them only
-- when this token still holds every one (a name lost is the lease lost). Never re-creates a lock
-- that expired.
-- One key per name, in the acquirer's order.
-- KEYS[1] the lock key of the first name (its value: the holder, see holder.lua); the next key is
--         the second name's, and so on
-- ARGV[1] the owner token that must hold every name
-- ARGV[2] the new TTL in milliseconds, counted from now
-- Reply: 1 when every name was held by this token and is now extended; 0 when one is not (nothing
-- is changed).
-- #include server-time.lua
-- #include holder.lua
local holders = {}
for i = 1, #KEYS do
  local holder = decode_holder(redis.call('get', KEYS[i]))
  if not holder or holder.token ~= ARGV[1] then return 0 end
  holders[i] = holder
end
local _, now = server_time()
local ttl = tonumber(ARGV[2])
for i = 1, #KEYS do
  local holder = holders[i]
  if holder.expiry then
    holder.expiry = now + ttl
    store_holder(KEYS[i], holder, now)
  else
    redis.call('pexpire', KEYS[i], ttl)
  end
end
return 1
