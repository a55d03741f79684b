-- reservation: a MultiMutex waiter's reservation of one name (its starvation mode,
-- multi-acquire.lua): while the reservation key lives, nobody but that waiter takes the name.
-- Needs: nothing; reads no KEYS or ARGV.
-- Provides: read_reservation(key) -> {arrival, names, token, channel} or nil (no reservation);
-- store_reservation(key, arrival, names, token, channel, ttl) writes one for `ttl` ms.
-- Value: "<arrival ms>|<names>|<#token>|<token><channel>": the server ms the waiter's acquire call
-- made its first attempt (the older reservation wins: multi-acquire.lua), how many names it
-- reserved (a waiter that takes over all of them need not wake it), its token, and the channel it
-- is woken on ("token:free", by a release that frees a name it reserved). The key's PX is the
-- reservation's lifetime, renewed by the waiter's attempts, so a dead reserver's lapses.
-- The flag the hot path reads: a name reserved has a value at its lock key whose queue expiry is not
-- 0 (holder.lua; multi-acquire.lua writes it), so an acquire or release that finds "queue known
-- empty" reads no reservation key. A free name without a value (a holder that expired) is read.
local function read_reservation(key)
  local value = redis.call('get', key)
  if not value then return nil end
  local arrival, names, token_len, rest = string.match(value, '^(%d+)|(%d+)|(%d+)|(.*)$')
  if not arrival then return nil end
  token_len = token_len + 0
  return {
    arrival = arrival + 0, names = names + 0, token = string.sub(rest, 1, token_len),
    channel = string.sub(rest, token_len + 1),
  }
end

local function store_reservation(key, arrival, names, token, channel, ttl)
  local value = string.format('%d|%d|%d|', arrival, names, #token) .. token .. channel
  redis.call('set', key, value, 'PX', string.format('%d', math.max(1, ttl)))
end
