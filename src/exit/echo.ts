/**
 * The answer of the operator's echo endpoint (ROTA_EXIT_IP_URL): the caller's address as text
 * (`203.0.113.7\n`) or as JSON (`{"ip": "203.0.113.7"}`, as ipify, httpbin's `origin` and most echo
 * services answer). Anything else is no address: a proxy that rewrote the page tells nothing.
 */
import { isIP } from 'node:net';

const MAX_ANSWER = 4096;

/** The address the echo endpoint saw, in canonical text (IPv6 lower case), or null. */
export function exitAddress(body: Buffer): string | null {
  if (body.length > MAX_ANSWER) return null;
  const text = body.toString('utf8').trim();
  const candidate = text.startsWith('{') ? fromJson(text) : text;
  if (candidate === null) return null;
  // httpbin's `origin` may list a chain ("a, b"): the first is the caller as the endpoint saw it.
  const ip = (candidate.split(',')[0] ?? '').trim().replace(/^\[|\]$/g, '');
  return isIP(ip) === 0 ? null : ip.toLowerCase();
}

function fromJson(text: string): string | null {
  try {
    const o = JSON.parse(text) as Record<string, unknown>;
    const v = o.ip ?? o.origin ?? o.address;
    return typeof v === 'string' ? v : null;
  } catch {
    return null;
  }
}
