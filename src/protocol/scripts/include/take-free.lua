-- take-free: a free hand-off lock taken by the caller (an uncontended acquire, or the queue's turn
-- coming to the caller).
-- Needs: next_fence (next-fence.lua), store_holder (holder.lua); reads no KEYS or ARGV.
-- Provides: take_free(lock_key, fence_key, fence_step_us, released, queue_expiry, me, ttl, label,
-- now_us, now) -> {1, fencing token, now}, hand-off-acquire.lua's reply. `released` is the release that
-- freed the lock (decode_holder's second result; nil when not known), `queue_expiry` what the new
-- holder's value records of the queue (holder.lua), `now_us` and `now` what server_time returned.
local function take_free(lock_key, fence_key, fence_step_us, released, queue_expiry, me, ttl, label, now_us, now)
  local fence = next_fence(fence_key, now_us, released and released.fence, fence_step_us)
  store_holder(lock_key, {
    fence = fence, expiry = now + ttl, min_ttl = 0, queue_expiry = queue_expiry,
    prev = released and released.prev or '', label = label, token = me,
  }, now)
  return {1, fence, now}
end
