/**
 * The owner token in a lock key's value. A Mutex stores the bare token; a FairMutex stores its
 * holder's fields before it, "<fence>|<expiry>|<min TTL>|<queue expiry>|<#prev>|<prev><owner>"
 * (src/protocol/scripts/include/fair-holder.lua).
 */
export function ownerTokenOf(value: string): string {
  const match = /^\d+\|\d+\|\d+\|\d+\|(\d+)\|/.exec(value);
  if (!match) return value;
  return value.slice(match[0].length + Number(match[1]));
}
