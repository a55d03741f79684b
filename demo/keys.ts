/** The Redis keys the demo writes (besides the locks' own `locksmith:{demo-*}` keys). */
export const LOCKED_COUNTER = 'demo:{counter}';
export const UNLOCKED_COUNTER = 'demo:{counter-unlocked}';
export const REPORT = 'demo:{report}';
export const DEMO_KEYS = [
  LOCKED_COUNTER,
  `${LOCKED_COUNTER}:fence`,
  UNLOCKED_COUNTER,
  REPORT,
  `${REPORT}:fence`,
];
