import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import type { Clock } from '../../src/services.ts';
import { json, makeApp, type TestApp } from './app.ts';

/**
 * Shared by the test/engine-*.test.ts files: they drive the outbound engine only through the HTTP API
 * (fastify inject over the real app) against loopback fixtures.
 */

/** Loopback targets are blocked by the SSRF guard unless allowed; short connect timeouts keep dead proxies cheap. */
export const ENGINE_ENV: Readonly<Record<string, string>> = {
  ROTA_SSRF_ALLOW: '127.0.0.0/8',
  ROTA_CONNECT_TIMEOUT_S: '0.5',
  ROTA_LOG_LEVEL: 'info',
};

export function engineApp(env: Record<string, string> = {}, overrides: Parameters<typeof makeApp>[1] = {}) {
  return makeApp({ ...ENGINE_ENV, ...env }, overrides);
}

/** A wall clock that can be moved forward (breakers run on it); durations stay on the real monotonic clock. */
export class SkewClock implements Clock {
  skewMs = 0;
  now = (): number => Date.now() + this.skewMs;
  monotonic = (): number => performance.now();
}

export async function addProxy(t: TestApp, body: Record<string, unknown> | string): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/proxies',
    ...json(typeof body === 'string' ? { url: body } : body),
  });
  assert.equal(res.statusCode, 201, res.body);
  return res.json().data.id as string;
}

export function deleteProxy(t: TestApp, id: string): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'DELETE', url: `/api/v1/proxies/${id}` });
}

export function proxied(t: TestApp, body: Record<string, unknown>): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: 'POST', url: '/api/v1/request', ...json(body) });
}

/** A proxied call that must succeed at the gateway level; returns its `data`. */
export async function proxiedOk(t: TestApp, body: Record<string, unknown>): Promise<ProxiedData> {
  const res = await proxied(t, body);
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data as ProxiedData;
}

export interface ProxiedData {
  status_code: number;
  headers: Record<string, string | string[]>;
  body: string;
  body_encoding: 'utf8' | 'base64';
  proxy_used: string;
  proxy_id: string;
  attempts: number;
  elapsed_ms: number;
  /** The session when the call named one, the policy rule when one applied. */
  session_id?: string;
  policy?: string;
}

export interface ProxyData {
  id: string;
  url: string;
  status: string;
  health: string;
  stats: {
    total_requests: number;
    successful_requests: number;
    failed_requests: number;
    avg_latency_ms: number;
  };
}

export async function getProxy(t: TestApp, id: string): Promise<ProxyData> {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/proxies/${id}` });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data as ProxyData;
}

export async function breakerState(t: TestApp, id: string): Promise<string> {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/circuit-breakers/${id}` });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data.state as string;
}

export async function putPolicy(t: TestApp, patch: Record<string, unknown>): Promise<void> {
  const res = await t.app.inject({ method: 'PUT', url: '/api/v1/retry/policy', ...json(patch) });
  assert.equal(res.statusCode, 200, res.body);
}

export async function putConfig(t: TestApp, patch: Record<string, unknown>): Promise<void> {
  const res = await t.app.inject({ method: 'PUT', url: '/api/v1/config', ...json(patch) });
  assert.equal(res.statusCode, 200, res.body);
}

/** No waiting between attempts: tests that are not about backoff stay fast and deterministic. */
export const NO_BACKOFF = { base_delay: 0, max_backoff_delay: 0, jitter: false } as const;

export async function waitUntil(check: () => boolean, ms = 3_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) assert.fail('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
