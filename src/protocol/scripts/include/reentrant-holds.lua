-- reentrant-holds: who holds a reentrant lock, and its holds (the ReentrantMutex's scripts).
-- Needs: store_holder (holder.lua); reads no KEYS or ARGV.
-- Provides: same_owner(a, b), is_hold(holder, holds_key, token), keep_until(lock_key, holds_key,
-- holder, ttl, now), below.
-- A hold token is 32 hex characters: the owner's 16 (the same for every hold of one owner), then 16
-- random ones. The lock key's value is a hand-off lock's holder (holder.lua) whose token is one
-- hold of the owner (the first, until it is released before the others); the holds key is a hash
-- of the owner's other holds (token -> '1'), expiring with the lock key. Holds are counted by token,
-- not by a bare counter, so that releasing a hold is idempotent and giving back an attempt that
-- never applied (a lost reply) cannot take away a hold the owner has.

-- Whether hold tokens `a` and `b` belong to the same owner.
local function same_owner(a, b)
  return #a == 32 and #b == 32 and string.sub(a, 1, 16) == string.sub(b, 1, 16)
end

-- Whether `token` is one of the holds of `holder` (the lock key's decoded value, nil when free).
local function is_hold(holder, holds_key, token)
  if not holder or not holder.expiry or not same_owner(holder.token, token) then return false end
  return holder.token == token or redis.call('hexists', holds_key, token) == 1
end

-- Keeps the lock (and the holds with it) until at least `ttl` ms from `now`: a hold never shortens
-- the lock under another hold of the same owner, whose lease counts on the expiry it bought.
local function keep_until(lock_key, holds_key, holder, ttl, now)
  holder.expiry = math.max(holder.expiry, now + ttl)
  store_holder(lock_key, holder, now)
  redis.call('pexpire', holds_key, math.max(1, holder.expiry - now))
end
