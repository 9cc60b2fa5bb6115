/** A rate such as `100/minute`: `limit` requests per `windowMs`. */
export interface Rate {
  readonly limit: number;
  readonly windowMs: number;
}

const UNIT_MS: Record<string, number> = {
  second: 1_000,
  seconds: 1_000,
  s: 1_000,
  minute: 60_000,
  minutes: 60_000,
  m: 60_000,
  hour: 3_600_000,
  hours: 3_600_000,
  h: 3_600_000,
  day: 86_400_000,
  days: 86_400_000,
  d: 86_400_000,
};

/** Parses `N/unit` (unit: second, minute, hour, day). Returns null when the text is not a rate. */
export function parseRate(text: string): Rate | null {
  const m = /^\s*(\d{1,9})\s*\/\s*([a-z]+)\s*$/i.exec(text);
  if (!m) return null;
  const limit = Number(m[1]);
  const windowMs = UNIT_MS[m[2]!.toLowerCase()];
  if (windowMs === undefined || limit < 1) return null;
  return { limit, windowMs };
}
