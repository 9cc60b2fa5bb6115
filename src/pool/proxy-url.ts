import { isIP } from 'node:net';
import { MAX_PROXY_URL_LENGTH, PROTOCOLS, type Protocol } from './types.ts';

export interface ParsedProxyUrl {
  protocol: Protocol;
  host: string;
  port: number;
  username: string | null;
  password: string | null;
}

export type ParseResult = { ok: true; value: ParsedProxyUrl } | { ok: false; reason: string };

// scheme://[userinfo@]host:port[/]  — no path, query or fragment: a proxy address is only an endpoint.
const SHAPE =
  /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(?:([^@/?#]*)@)?(\[[^\]/?#@]*\]|[^:/?#@[\]]*)(?::([^/?#]*))?\/?$/;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

function fail(reason: string): ParseResult {
  return { ok: false, reason };
}

function validHost(host: string): string | null {
  if (host.startsWith('[')) {
    const inner = host.slice(1, -1).toLowerCase();
    return isIP(inner) === 6 ? inner : null;
  }
  const h = host.toLowerCase().replace(/\.$/, '');
  if (h === '' || h.length > 253) return null;
  if (isIP(h) === 4) return h;
  if (/^[0-9.]+$/.test(h)) return null; // looks numeric but is not a dotted quad
  return h.split('.').every((l) => LABEL.test(l)) ? h : null;
}

function decode(part: string): string | null {
  try {
    return decodeURIComponent(part);
  } catch {
    return null;
  }
}

function parseUserInfo(
  info: string | undefined,
): { username: string | null; password: string | null } | null {
  if (info === undefined) return { username: null, password: null };
  const idx = info.indexOf(':');
  const user = decode(idx === -1 ? info : info.slice(0, idx));
  const pass = idx === -1 ? null : decode(info.slice(idx + 1));
  if (user === null || (idx !== -1 && pass === null)) return null;
  return { username: user === '' ? null : user, password: pass === '' ? null : pass };
}

/** Parses and normalises a proxy URL. The reason never contains the credentials. */
export function parseProxyUrl(input: string): ParseResult {
  if (input.length > MAX_PROXY_URL_LENGTH) return fail(`longer than ${MAX_PROXY_URL_LENGTH} characters`);
  const m = SHAPE.exec(input.trim());
  if (!m) return fail('expected scheme://host:port');
  const scheme = m[1]!.toLowerCase();
  if (!(PROTOCOLS as readonly string[]).includes(scheme)) {
    return fail(`unsupported scheme; expected one of ${PROTOCOLS.join(', ')}`);
  }
  const host = validHost(m[3]!);
  if (host === null) return fail('missing or invalid host');
  if (m[4] === undefined || m[4] === '') return fail('missing port');
  if (!/^\d{1,5}$/.test(m[4]) || Number(m[4]) < 1 || Number(m[4]) > 65535) {
    return fail('port must be an integer from 1 to 65535');
  }
  const creds = parseUserInfo(m[2]);
  if (!creds) return fail('malformed credentials in URL');
  return { ok: true, value: { protocol: scheme as Protocol, host, port: Number(m[4]), ...creds } };
}
