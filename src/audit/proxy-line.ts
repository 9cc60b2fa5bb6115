/**
 * Masking of anything that might be a proxy line, valid or not, in every form Rota reads
 * (src/pool/proxy-url.ts, src/sources/lines.ts): `scheme://user:pass@host:port`, `user:pass@host:port`,
 * `scheme://host:port:user:pass`, `host:port:user:pass`, `user:pass:host:port`. Whatever follows a
 * host:port pair in a colon form goes, and so does URL user-info; a URL's query values and fragment are
 * masked too (a list's URL may carry `?token=`). A line that fails to parse is masked all the same: the
 * rules look at the shape only.
 */
import { isIP } from 'node:net';

export const REDACTED = '[REDACTED]';
/** What a query value or a source's header value is shown as. */
export const MASK = '***';

// Any host field, valid or not (`bad_host!`): what a colon form holds before its first colon.
const HOST = String.raw`(?:\[[0-9A-Fa-f:.%]*\]|[^\s:/@?#"'=,;(){}<>\[\]]+)`;
// A client's URL after its scheme and user-info, when nothing in it could hide a password.
const CLEAN_AUTHORITY =
  /^(?:\[[0-9A-Fa-f:.%]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]+)(?::\d{1,5})?(?:[/?#][^\s:]*)?$/;
const CLEAN_HOST_PORT = /^(?:\[[0-9A-Fa-f:.%]*\]|[A-Za-z0-9._~-]*):\d{1,5}:/;
const SCHEME = /[A-Za-z][A-Za-z0-9+.-]*:\/\//g;
// `host:port:` inside a line, after a start or a delimiter (not `/`, `:` or `@`: a path, an IPv6 address).
const HOST_PORT_COLON = new RegExp(String.raw`(^|[\s"'=,;(<{\[])(${HOST}:\d{1,5}):`, 'g');
// `user:pass:host:port` as a whole line: the credentials are everything before the last host:port pair.
const CREDS_FIRST = new RegExp(String.raw`^(.*:.*):((?:${HOST})?:\d{1,5})$`);
// `host:notaport:user:pass`: no port where one belongs, so everything after the host's field goes.
const HOST_FIELD_REST = new RegExp(String.raw`^((?:${HOST})?):(?!\d{1,5}:)([^:\s]*:.*)$`);
const HOST_PORT_PREFIX = new RegExp(String.raw`^(?:${HOST})?:\d{1,5}:`);
/** More than one colon outside brackets: not the `host:port` that may follow user-info. */
function manyColons(text: string): boolean {
  return (text.replace(/\[[0-9A-Fa-f:.%]*\]/g, '').match(/:/g)?.length ?? 0) > 1;
}
const URL_TAIL_END = /[\s"'<>`]/;

/** `?a=1&b` as `?a=***&b=***`, `#frag` as `#***`; the path stays. */
export function maskQuery(tail: string): string {
  const hash = tail.indexOf('#');
  const beforeHash = hash === -1 ? tail : tail.slice(0, hash);
  const fragment =
    hash === -1 || hash === tail.length - 1 ? tail.slice(hash === -1 ? tail.length : hash) : `#${MASK}`;
  const q = beforeHash.indexOf('?');
  if (q === -1 || q === beforeHash.length - 1) return beforeHash + fragment;
  const params = beforeHash
    .slice(q + 1)
    .split('&')
    .map((p) => {
      if (p === '') return p;
      const eq = p.indexOf('=');
      return eq === -1 ? MASK : `${p.slice(0, eq)}=${MASK}`;
    });
  return `${beforeHash.slice(0, q + 1)}${params.join('&')}${fragment}`;
}

/** The authority and what follows, up to the end of the URL's token: `null` masks the rest of the line. */
function maskAuthority(rest: string): { kept: string; tailEnd: number } | null {
  const host = /^(?:\[[^\]\s]*\]|[^:/?#@\s"'<>]*)/.exec(rest)![0];
  let i = host.length;
  if (rest[i] === ':') {
    const port = /^\d*/.exec(rest.slice(i + 1))![0];
    const after = rest[i + 1 + port.length];
    // Another colon, or anything but a path, query or end after the colon: a password may follow.
    if (
      after === ':' ||
      (after !== undefined && !/[/?#]/.test(after) && (port === '' || !/[\s"'<>]/.test(after)))
    ) {
      return null;
    }
    i += 1 + port.length;
  }
  const m = URL_TAIL_END.exec(rest.slice(i));
  const end = m ? i + m.index : rest.length;
  return { kept: rest.slice(0, i) + maskQuery(rest.slice(i, end)), tailEnd: end };
}

/** Every `scheme://` of a line: user-info up to the line's last `@` goes, then the authority is checked. */
function maskUrls(line: string, strict: boolean): string {
  let out = '';
  let from = 0;
  SCHEME.lastIndex = 0;
  for (let m = SCHEME.exec(line); m !== null; m = SCHEME.exec(line)) {
    const start = m.index + m[0].length;
    out += line.slice(from, start);
    let rest = line.slice(start);
    const hostPort = HOST_PORT_PREFIX.exec(rest);
    if (hostPort) return `${out}${hostPort[0]}${REDACTED}`;
    const at = rest.lastIndexOf('@');
    const tokenEnd = rest.search(/\s/);
    const userInfo = at !== -1 && (tokenEnd === -1 || at < tokenEnd || rest.slice(0, at).includes(':'));
    // `scheme://host:bad:user:pa@ss`: an `@` inside a password after a colon form.
    if (userInfo && manyColons(rest.slice(0, at))) return out + REDACTED;
    if (userInfo) {
      out += `${REDACTED}@`;
      rest = rest.slice(at + 1);
    }
    const auth = maskAuthority(rest);
    // After user-info, a second colon means the `@` was inside a password: nothing of it is kept; nor,
    // in a client's value, of a host that is no host (`user://pass:host:port`).
    if (auth === null && (userInfo || strict)) return out + REDACTED;
    if (auth === null) {
      const host = /^(?:\[[^\]\s]*\]|[^:/?#@\s]*)(?::\d+)?/.exec(rest)![0];
      return `${out}${host}:${REDACTED}`;
    }
    out += auth.kept;
    from = line.length - rest.length + auth.tailEnd;
    SCHEME.lastIndex = from;
  }
  return out + line.slice(from);
}

/** An IP address, an IP network (`fd00::/8`) or a date-time: colons that are no colon form. */
function isHarmless(token: string): boolean {
  return (
    isIP(token.replace(/\/\d{1,3}$/, '')) !== 0 ||
    /^\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)?$/.test(token)
  );
}

/** Whether the text from `i` to its next blank is harmless. */
function isHarmlessAt(line: string, i: number): boolean {
  return isHarmless(line.slice(i).split(/[\s"',;)>}\]]/, 1)[0] ?? '');
}

/** `host:port:` anywhere in the line (not an IP address): whatever follows it goes. */
function maskAfterHostPort(line: string): string {
  HOST_PORT_COLON.lastIndex = 0;
  for (let m = HOST_PORT_COLON.exec(line); m !== null; m = HOST_PORT_COLON.exec(line)) {
    const at = m.index + m[1]!.length;
    if (isHarmlessAt(line, at)) continue;
    return `${line.slice(0, at)}${m[2]}:${REDACTED}`;
  }
  return line;
}

/**
 * A line without `scheme://`. `host:port:user:pass` is read first (a password may hold `@`), then
 * `user:pass:host:port`; a line that could be either keeps neither. `user:pass@host:port` loses what
 * precedes its last `@`, `host:notaport:...` what follows the host.
 */
function maskBare(line: string, strict: boolean): string {
  const lead = line.slice(0, line.length - line.trimStart().length);
  const trimmed = line.trim();
  if (isHarmless(trimmed)) return line;
  const hostPort = HOST_PORT_PREFIX.exec(trimmed);
  const credsFirst = CREDS_FIRST.exec(trimmed);
  if (hostPort && credsFirst) return lead + REDACTED;
  if (credsFirst) return `${lead}${REDACTED}:${credsFirst[2]}`;
  if (hostPort) return `${lead}${hostPort[0]}${REDACTED}`;
  const at = trimmed.lastIndexOf('@');
  if (at !== -1) {
    const tail = trimmed.slice(at + 1);
    // `host:bad:user:pa@ss`, `user:pa@ss:host:bad`: an `@` inside a password, so no host field is one.
    const inPassword = manyColons(trimmed.slice(0, at)) || manyColons(tail);
    return inPassword ? lead + REDACTED : `${lead}${REDACTED}@${tail}`;
  }
  const hostRest = HOST_FIELD_REST.exec(trimmed);
  if (hostRest) return `${lead}${hostRest[1]}:${REDACTED}`;
  const masked = maskAfterHostPort(line);
  if (!strict || masked !== line || !manyColons(trimmed)) return masked;
  return `${lead}${trimmed.slice(0, trimmed.indexOf(':'))}:${REDACTED}`;
}

/**
 * One line of text, masked wherever it might hold a proxy's credentials or a URL's secrets. `strict` is
 * for a value a client sent (a field of a body): any line with two colons or more that no rule read
 * keeps only what precedes its first colon. Free text (a log message) is not strict, so that `Error: a:
 * b` stays readable.
 */
export function maskProxyLine(line: string, strict = true): string {
  const masked = maskForms(line, strict);
  if (!strict) return masked;
  const trimmed = line.trim();
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(trimmed)?.[0] ?? '';
  const rest = trimmed.slice(scheme.length);
  if (scheme !== '') return strictUrl(masked, scheme, rest);
  // No rule read it, yet colons remain past any scheme: keep up to the first of them.
  if (masked.includes(REDACTED) || !manyColons(rest) || isHarmless(trimmed)) return masked;
  return `${scheme}${rest.slice(0, rest.indexOf(':'))}:${REDACTED}`;
}

/**
 * A client's URL keeps what maskForms left only when its shape is plain (`host[:port][/path]`, one colon
 * at most in its user-info) or `host:port:...`; in any other, no part can be told from a password.
 */
function strictUrl(masked: string, scheme: string, rest: string): string {
  const hostPort = CLEAN_HOST_PORT.exec(rest);
  if (hostPort) return `${scheme}${hostPort[0]}${REDACTED}`;
  const at = rest.lastIndexOf('@');
  const plain = CLEAN_AUTHORITY.test(at === -1 ? rest : rest.slice(at + 1));
  return plain && (at === -1 || !manyColons(rest.slice(0, at))) ? masked : `${scheme}${REDACTED}`;
}

function maskForms(line: string, strict: boolean): string {
  if (line.includes('://')) {
    // `user:pa://ss:host:port`: a colon form whose password looks like a URL.
    const bare = /^\s*[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(line) ? line : maskBare(line, strict);
    return bare === line ? maskAfterHostPort(maskUrls(line, strict)) : bare;
  }
  if (line.includes('@') || line.includes(':')) return maskBare(line, strict);
  return line;
}
