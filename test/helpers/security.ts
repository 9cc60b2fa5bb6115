import assert from 'node:assert/strict';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';

/** Credentials the security tests plant; none may ever come back in a response or a log line. */
export const API_KEY = 'rota-test-key-7f3a9c2e51d84b06';
export const PROXY_USER = 'proxyuser-4b1e';
export const PROXY_PASS = 'proxypass-9d2c7e0a';

/** A loopback port nothing listens on: proxies there fail at once, and nothing leaves the machine. */
export const DEAD_PROXY_HOST = '127.0.0.1';
export const DEAD_PROXY_PORT = 9;

export const AUTH_ENV: Readonly<Record<string, string>> = {
  ROTA_REQUIRE_AUTH: 'true',
  ROTA_API_KEY: API_KEY,
  ROTA_HEALTH_CHECK_URL: 'http://203.0.113.10/generate_204',
};

export interface RouteInfo {
  readonly path: string;
  readonly methods: readonly string[];
}

/** Every route the app serves, read from its own router (so a new route is fuzzed without a test edit). */
export function listRoutes(app: FastifyInstance): RouteInfo[] {
  const text = app.printRoutes({ commonPrefix: false });
  const stack: string[] = [];
  const out: RouteInfo[] = [];
  for (const line of text.split('\n')) {
    const m = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([^)]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    const parent = stack.join('');
    // The tree shows a nested wildcard under its parent only approximately: callers map it to a real path.
    const seg = m[2] === '*' && parent !== '' && !parent.endsWith('/') ? '/*' : m[2]!;
    const path = `${parent}${seg}`;
    stack.push(seg);
    if (m[3]) out.push({ path, methods: m[3].split(', ').filter((x) => x !== 'HEAD') });
  }
  return out;
}

/** Fails when any planted credential appears in the text. */
export function assertNoSecret(text: string, where: string, secrets: readonly string[] = SECRETS): void {
  for (const s of secrets) assert.ok(!text.includes(s), `${where} leaks a credential (${s.slice(0, 6)}…)`);
}

/** Also the forms a credential takes on the wire: the Proxy-Authorization value, the URL-encoded user-info. */
export const SECRETS: readonly string[] = [
  API_KEY,
  PROXY_PASS,
  PROXY_USER,
  Buffer.from(`${PROXY_USER}:${PROXY_PASS}`).toString('base64'),
];

export function responseText(res: LightMyRequestResponse): string {
  return `${JSON.stringify(res.headers)}\n${res.body}`;
}

/** The series of a Prometheus text exposition: name plus labels, without values. */
export function seriesOf(metricsText: string): Set<string> {
  const out = new Set<string>();
  for (const line of metricsText.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    out.add(line.slice(0, line.lastIndexOf(' ')));
  }
  return out;
}

export function addProxyBody(): { url: string; username: string; password: string } {
  return { url: `http://${DEAD_PROXY_HOST}:${DEAD_PROXY_PORT}`, username: PROXY_USER, password: PROXY_PASS };
}
