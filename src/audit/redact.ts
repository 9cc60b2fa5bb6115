/**
 * Redaction shared by the audit log, the logger and validation errors: anything that reaches a log
 * line or a response passes through here first. Text is masked line by line as a possible proxy line
 * (proxy-line.ts); a line of JSON is parsed and redacted as data, so that its keys are seen.
 */
import { MASK, maskProxyLine, REDACTED } from './proxy-line.ts';

export { MASK, maskProxyLine, REDACTED };

/** Field and header names whose value is a secret, matched anywhere in the name (`x-auth-token`). */
const SECRET_KEY =
  /pass(?:wd|word|phrase)?$|^pass|pwd|^pw$|passw|secret|token|api[-_]?key|auth|cookie|credential|private[-_]?key|^user(?:name)?$|^username[-_]template$|signature/i;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

/** Keys whose value is a map of names the client chose to secrets (a source's or a request's headers). */
const SECRET_MAP_KEY = /^headers$/i;

const MAX_STRING = 2048;
const MAX_JSON_LINE = 65_536;
// `Bearer xyz`, `Basic xyz`: credentials typed into free text.
const AUTH_SCHEME = /\b(bearer|basic|digest|apikey|token)([ \t]+)[^\s,;"']+/gi;
// `"password": "..."` (a JSON line that does not parse) and `password=...` in free text.
const QUOTED_PAIR = /("([^"\\]{1,128})"\s*:\s*)"(?:[^"\\]|\\.)*(?:"|$)/g;
const EQUALS_PAIR = /(^|[\s&?;,])([A-Za-z0-9_.-]{1,128})=([^\s&;,]*)/g;

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

/** A line of JSON redacted as data, or null when it is not JSON. */
function jsonLine(line: string, depth: number): string | null {
  const t = line.trim();
  if (t.length > MAX_JSON_LINE || !(t.startsWith('{') || t.startsWith('['))) return null;
  try {
    return JSON.stringify(redactDeep(JSON.parse(t) as unknown, depth + 1));
  } catch {
    return null;
  }
}

function redactLine(line: string, depth: number, strict: boolean): string {
  const json = depth < 6 ? jsonLine(line, depth) : null;
  if (json !== null) return json;
  // The line's forms first: a pair's value could swallow the colons that mark a proxy line.
  return maskProxyLine(line, strict)
    .replace(QUOTED_PAIR, (all, head: string, key: string) =>
      isSecretKey(key) ? `${head}"${REDACTED}"` : all,
    )
    .replace(EQUALS_PAIR, (all, lead: string, key: string) =>
      isSecretKey(key) ? `${lead}${key}=${MASK}` : all,
    )
    .replace(AUTH_SCHEME, `$1$2${REDACTED}`);
}

/**
 * Text masked line by line, not bounded in length (a stack trace in a log line). `strict` for a value a
 * client sent (maskProxyLine).
 */
export function redactString(text: string, depth = 0, strict = false): string {
  if (!text.includes('\n')) return redactLine(text, depth, strict);
  return text
    .split('\n')
    .map((l) => redactLine(l, depth, strict))
    .join('\n');
}

/** A value a client sent, as it may be logged or answered: no credentials, tokens or query values; bounded. */
export function redactText(text: string, depth = 0): string {
  // Redact before truncating: a cut could drop what marks the part to remove.
  const clean = redactString(text, depth, true);
  return clean.length > MAX_STRING ? `${clean.slice(0, MAX_STRING)}…` : clean;
}

/** Names kept, every value masked. */
function maskValues(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return REDACTED;
  return Object.fromEntries(
    Object.keys(value)
      .slice(0, 100)
      .map((k) => [k.slice(0, 128), MASK]),
  );
}

/** A value found at `path` (a validation error's input), redacted as redactDeep would inside its parents. */
export function redactAt(path: readonly (string | number)[], value: unknown): unknown {
  const names = path.filter((k): k is string => typeof k === 'string');
  if (names.some(isSecretKey)) return REDACTED;
  const mapAt = path.findIndex((k) => typeof k === 'string' && SECRET_MAP_KEY.test(k));
  if (mapAt === path.length - 1) return maskValues(value);
  if (mapAt !== -1) return REDACTED;
  return redactDeep(value);
}

/** A deep copy with secret-named keys replaced and every string masked. Bounded in depth and size. */
export function redactDeep(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactText(value, depth);
  if (value === null || typeof value !== 'object') return value;
  if (depth > 6) return '[…]';
  if (Array.isArray(value)) return value.slice(0, 100).map((v) => redactDeep(v, depth + 1));
  const out: Record<string, unknown> = {};
  let n = 0;
  for (const [k, v] of Object.entries(value)) {
    if (n++ >= 100) break;
    const name = k.slice(0, 128);
    if (isSecretKey(k)) out[name] = REDACTED;
    else if (SECRET_MAP_KEY.test(k)) out[name] = maskValues(v);
    else out[name] = redactDeep(v, depth + 1);
  }
  return out;
}
