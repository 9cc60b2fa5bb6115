// Server side of the SOCKS5 handshake (RFC 1928) with username/password auth (RFC 1929), as pure
// functions over bytes. The framing is what a hostile client pokes at, so it lives apart from the
// sockets: every parser is total (never throws), incremental (a partial message asks for more bytes),
// and only ever decides on bytes it has seen, so a prefix of a good message is never judged bad.

import { isUtf8 } from 'node:buffer';
import { isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';
import { SOCKS5_REPLY } from '../errors/codes.ts';

export type Parsed<T> =
  | { readonly type: 'more' }
  | { readonly type: 'ok'; readonly value: T; readonly used: number }
  | { readonly type: 'bad'; readonly reason: string; readonly reply?: number };

export interface Socks5Address {
  readonly type: 'ipv4' | 'ipv6' | 'domain';
  readonly host: string;
  readonly port: number;
}

export interface Socks5Greeting {
  readonly methods: readonly number[];
}

export interface Socks5Credentials {
  readonly username: string;
  readonly password: string;
}

export interface Socks5Request {
  readonly command: number;
  readonly address: Socks5Address;
}

export const METHOD = { NO_AUTH: 0x00, USER_PASS: 0x02, NONE_ACCEPTABLE: 0xff } as const;

export const COMMAND = { CONNECT: 1, BIND: 2, UDP_ASSOCIATE: 3 } as const;

/** The replies (RFC 1928 section 6): the one table of the error registry. */
export const REPLY = SOCKS5_REPLY;

const SOCKS_VERSION = 0x05;
const USER_PASS_VERSION = 0x01;
const ATYP = { IPV4: 0x01, DOMAIN: 0x03, IPV6: 0x04 } as const;

const MORE: { readonly type: 'more' } = Object.freeze({ type: 'more' });

function bad(reason: string, reply?: number): Parsed<never> {
  return reply === undefined ? { type: 'bad', reason } : { type: 'bad', reason, reply };
}

/** 1-255 bytes of printable ASCII: anything else cannot be a host name, and would corrupt log lines. */
function isValidName(name: Uint8Array): boolean {
  if (name.length === 0 || name.length > 255) return false;
  return name.every((b) => b >= 0x21 && b <= 0x7e);
}

/** VER NMETHODS METHODS. */
export function parseGreeting(buf: Buffer): Parsed<Socks5Greeting> {
  if (buf.length < 1) return MORE;
  if (buf[0] !== SOCKS_VERSION) return bad('not a SOCKS5 greeting');
  if (buf.length < 2) return MORE;
  const count = buf[1]!;
  if (count === 0) return bad('no authentication methods offered');
  const used = 2 + count;
  if (buf.length < used) return MORE;
  return { type: 'ok', value: { methods: Array.from(buf.subarray(2, used)) }, used };
}

/** RFC 1929: VER ULEN UNAME PLEN PASSWD. */
export function parseUserPass(buf: Buffer): Parsed<Socks5Credentials> {
  if (buf.length < 1) return MORE;
  if (buf[0] !== USER_PASS_VERSION) return bad('unsupported username/password auth version');
  if (buf.length < 2) return MORE;
  const ulen = buf[1]!;
  if (ulen === 0) return bad('empty username');
  if (buf.length < 3 + ulen) return MORE;
  const plen = buf[2 + ulen]!;
  const used = 3 + ulen + plen;
  if (buf.length < used) return MORE;
  const user = buf.subarray(2, 2 + ulen);
  const pass = buf.subarray(3 + ulen, used);
  // Lossy decoding would let distinct byte strings compare equal to a configured secret.
  if (!isUtf8(user) || !isUtf8(pass)) return bad('credentials are not valid UTF-8');
  return { type: 'ok', value: { username: user.toString('utf8'), password: pass.toString('utf8') }, used };
}

/** VER CMD RSV ATYP DST.ADDR DST.PORT. RSV is not checked: some clients send garbage there. */
export function parseRequest(buf: Buffer): Parsed<Socks5Request> {
  if (buf.length < 1) return MORE;
  if (buf[0] !== SOCKS_VERSION) return bad('not a SOCKS5 request');
  if (buf.length < 4) return MORE;
  const address = parseAddress(buf, 3);
  if (address.type !== 'ok') return address;
  return { type: 'ok', value: { command: buf[1]!, address: address.value }, used: address.used };
}

/** ATYP DST.ADDR DST.PORT starting at `at`; `used` is the absolute end offset. */
function parseAddress(buf: Buffer, at: number): Parsed<Socks5Address> {
  const atyp = buf[at]!;
  if (atyp === ATYP.IPV4) {
    const end = at + 1 + 4 + 2;
    if (buf.length < end) return MORE;
    const host = Array.from(buf.subarray(at + 1, at + 5)).join('.');
    return { type: 'ok', value: { type: 'ipv4', host, port: buf.readUInt16BE(end - 2) }, used: end };
  }
  if (atyp === ATYP.IPV6) {
    const end = at + 1 + 16 + 2;
    if (buf.length < end) return MORE;
    const host = new ipaddr.IPv6(Array.from(buf.subarray(at + 1, at + 17))).toRFC5952String();
    return { type: 'ok', value: { type: 'ipv6', host, port: buf.readUInt16BE(end - 2) }, used: end };
  }
  if (atyp === ATYP.DOMAIN) {
    if (buf.length < at + 2) return MORE;
    const len = buf[at + 1]!;
    if (len === 0) return bad('empty domain name', REPLY.GENERAL_FAILURE);
    const end = at + 2 + len + 2;
    if (buf.length < end) return MORE;
    const name = buf.subarray(at + 2, at + 2 + len);
    if (!isValidName(name)) return bad('domain name has non-printable bytes', REPLY.GENERAL_FAILURE);
    const host = name.toString('latin1');
    return { type: 'ok', value: { type: 'domain', host, port: buf.readUInt16BE(end - 2) }, used: end };
  }
  // The address length is unknown, so the stream cannot be resynchronised: the server must close.
  return bad('unknown address type', REPLY.ADDRESS_TYPE_NOT_SUPPORTED);
}

/**
 * Encoders throw a RangeError on out-of-range arguments: Buffer.from([256]) would silently wrap to 0,
 * which for a reply code means SUCCEEDED. Such a call is a bug in the server, not client input.
 */
function checkByte(value: number, what: string): number {
  if (!Number.isInteger(value) || value < 0 || value > 0xff) throw new RangeError(`${what} is not a byte`);
  return value;
}

/** Server's choice of method: VER METHOD. */
export function methodSelection(method: number): Buffer {
  return Buffer.from([SOCKS_VERSION, checkByte(method, 'method')]);
}

/** RFC 1929 status: VER STATUS, 0x00 = success; any other value obliges the server to close. */
export function authStatus(ok: boolean): Buffer {
  return Buffer.from([USER_PASS_VERSION, ok ? 0x00 : 0x01]);
}

/** VER REP RSV ATYP BND.ADDR BND.PORT; no `bound` means 0.0.0.0:0, as for failures. */
export function reply(code: number, bound?: { readonly host: string; readonly port: number }): Buffer {
  checkByte(code, 'reply code');
  const port = bound?.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 0xffff) throw new RangeError('bound port out of range');
  const portBytes = Buffer.alloc(2);
  portBytes.writeUInt16BE(port);
  const address = bound === undefined ? Buffer.from([ATYP.IPV4, 0, 0, 0, 0]) : encodeHost(bound.host);
  return Buffer.concat([Buffer.from([SOCKS_VERSION, code, 0x00]), address, portBytes]);
}

/** ATYP BND.ADDR for an IPv4 or IPv6 literal (brackets allowed), else a printable host name. */
function encodeHost(host: string): Buffer {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (isIPv4(bare)) return Buffer.from([ATYP.IPV4, ...bare.split('.').map(Number)]);
  if (isIPv6(bare)) return Buffer.from([ATYP.IPV6, ...ipaddr.IPv6.parse(bare).toByteArray()]);
  const name = Buffer.from(host, 'latin1');
  if (!isValidName(name) || name.toString('latin1') !== host) {
    throw new RangeError('bound host is neither an IP address nor a valid host name');
  }
  return Buffer.concat([Buffer.from([ATYP.DOMAIN, name.length]), name]);
}
