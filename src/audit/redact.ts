/**
 * Redaction shared by the audit log, the request log and validation errors: anything that reaches a log
 * line or a response passes through here first.
 */
export const REDACTED = '[REDACTED]';

/** Field and header names whose value is a secret, matched anywhere in the name (`x-auth-token`). */
const SECRET_KEY =
  /pass(?:wd|word|phrase)?$|^pass|pwd|passw|secret|token|api[-_]?key|auth|cookie|credential|private[-_]?key|^user(?:name)?$|signature/i;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

const MAX_STRING = 2048;
// `Bearer xyz`, `Basic xyz`: credentials typed into free text.
const AUTH_SCHEME = /\b(bearer|basic|digest|apikey|token)([ \t]+)[^\s,;"']+/gi;

/**
 * Removes user-info from anything URL-like. Everything between the scheme (or the start) and the LAST
 * `@` goes: a password may itself hold `@`, `/`, `:`, `#` or spaces, so no narrower pattern is safe.
 * Text with an e-mail address loses a little too, which is the right side to err on.
 */
export function redactUrlCredentials(text: string): string {
  const at = text.lastIndexOf('@');
  if (at === -1) return text;
  const scheme = /^[^:/?#@\s]*:\/\//.exec(text);
  const start = scheme && scheme[0].length <= at ? scheme[0].length : 0;
  return `${text.slice(0, start)}${REDACTED}${text.slice(at)}`;
}

/** Free text as it may be logged: no URL user-info, no `Bearer` token, bounded in length. */
export function redactText(text: string): string {
  // Redact before truncating: a cut could drop the `@` that marks what to remove.
  const clean = redactUrlCredentials(text).replace(AUTH_SCHEME, `$1$2${REDACTED}`);
  return clean.length > MAX_STRING ? `${clean.slice(0, MAX_STRING)}…` : clean;
}

/** A deep copy with secret-named keys replaced and URL user-info removed. Bounded in depth and size. */
export function redactDeep(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth > 6) return '[…]';
  if (Array.isArray(value)) return value.slice(0, 100).map((v) => redactDeep(v, depth + 1));
  const out: Record<string, unknown> = {};
  let n = 0;
  for (const [k, v] of Object.entries(value)) {
    if (n++ >= 100) break;
    out[k.slice(0, 128)] = isSecretKey(k) ? REDACTED : redactDeep(v, depth + 1);
  }
  return out;
}
