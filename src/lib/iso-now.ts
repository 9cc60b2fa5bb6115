// Calls within the same millisecond share one string: at thousands of answers and log lines a second,
// formatting a Date for each was a measurable share of the per-call CPU.
let lastMs = Number.NaN;
let lastIso = '';

/** The current time as an ISO 8601 string (`2026-11-26T16:00:00.000Z`), formatted once per millisecond. */
export function isoNow(): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}
