/**
 * Redaction shared by the audit log, the request log and validation errors: anything that reaches a log
 * line or a response passes through here first.
 */
export const REDACTED = '[REDACTED]';

const SECRET_KEY =
  /^(password|passwd|pass|secret|token|api[-_]?key|x-api-key|authorization|proxy-authorization|cookie|set-cookie|access[-_]?token|refresh[-_]?token|client[-_]?secret|credentials?)$/i;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

// user-info inside any URL-looking text: scheme://user:pass@host
const USERINFO = /([a-z][a-z0-9+.-]*:\/\/)[^/@\s?#]*@/gi;

export function redactUrlCredentials(text: string): string {
  return text.replace(USERINFO, `$1${REDACTED}@`);
}

/** A deep copy with secret-named keys replaced and URL user-info removed. Bounded in depth and size. */
export function redactDeep(value: unknown, depth = 0): unknown {
  if (typeof value === 'string')
    return redactUrlCredentials(value.length > 2048 ? `${value.slice(0, 2048)}…` : value);
  if (value === null || typeof value !== 'object') return value;
  if (depth > 6) return '[…]';
  if (Array.isArray(value)) return value.slice(0, 100).map((v) => redactDeep(v, depth + 1));
  const out: Record<string, unknown> = {};
  let n = 0;
  for (const [k, v] of Object.entries(value)) {
    if (n++ >= 100) break;
    out[k] = isSecretKey(k) ? REDACTED : redactDeep(v, depth + 1);
  }
  return out;
}
