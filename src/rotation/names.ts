/** The rotation strategies by name; no imports, so the API's schemas (and the dashboard's types) can use it. */
export const STRATEGIES = [
  'round-robin',
  'random',
  'weighted',
  'least-used',
  'performance-based',
  'session-persistence',
  'geo-targeted',
] as const;
export type StrategyName = (typeof STRATEGIES)[number];
