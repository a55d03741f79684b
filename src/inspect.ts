/**
 * The key Node's `util.inspect` (and so `console.log`) looks for: a lease or a lock prints a short
 * form under it instead of its internals (timers, the backend, a client's whole state). Registered
 * with `Symbol.for`, so no import of `node:util` is needed.
 */
export const inspectCustom: unique symbol = Symbol.for('nodejs.util.inspect.custom');
