import type { BanPolicy } from './policy.ts';

/** Only the head of a body is searched for patterns: enough for a block page, bounded in cost. */
export const PATTERN_WINDOW = 64 * 1024;

export interface TargetAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The body, or its first bytes; null when not available (a streamed answer is judged by status). */
  readonly body: Buffer | null;
}

/**
 * Is this answer a ban of the proxy's address? A listed status, or a body whose first 64 KiB contain a
 * pattern (plain substrings, case-insensitive). Returns the site's Retry-After in seconds when it sent
 * one, or null for "a ban, no Retry-After"; undefined when it is not a ban. `now` is read only for a
 * ban (an HTTP-date Retry-After): most answers are not one, and a clock read is not free per request.
 */
export function banSignal(
  policy: BanPolicy,
  a: TargetAnswer,
  now: () => number,
): { retryAfterS: number | null } | undefined {
  if (!policy.enabled) return undefined;
  const byStatus = policy.status_codes.includes(a.status);
  if (!byStatus && !matchesPattern(policy.body_patterns, a.body)) return undefined;
  return { retryAfterS: retryAfterSeconds(a.headers['retry-after'], now()) };
}

function matchesPattern(patterns: readonly string[], body: Buffer | null): boolean {
  if (patterns.length === 0 || body === null || body.length === 0) return false;
  const text = body.subarray(0, PATTERN_WINDOW).toString('utf8').toLowerCase();
  return patterns.some((p) => text.includes(p.toLowerCase()));
}

/** RFC 9110 Retry-After: delay-seconds or an HTTP-date; null when absent or unreadable. */
export function retryAfterSeconds(value: string | string[] | undefined, now: number): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined) return null;
  if (/^\d{1,10}$/.test(v.trim())) return Number(v.trim());
  const at = Date.parse(v);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - now) / 1000));
}
