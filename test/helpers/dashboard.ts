/**
 * Helpers of the dashboard's browser test (dashboard-browser.test.ts): Chromium launched as the docs test
 * does (Debian's binary, its background traffic sent to a sink), a page watcher that collects console
 * errors and every URL requested, a traffic loop of `POST /api/v1/request`, and small API calls.
 */
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import type { TrapProxy } from './browser.ts';

/** Logged by the page itself, so that violations show up even when reported only as events. */
export const CSP_LISTENER = `document.addEventListener('securitypolicyviolation', (e) => {
  console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + e.blockedURI);
});`;

export interface Watched {
  /** Every URL the page requested. */
  readonly requests: string[];
  /** API requests with the X-API-Key they carried (null without one). */
  readonly apiCalls: { url: string; key: string | null }[];
  /** Console errors, page errors, failed requests and HTTP errors. */
  readonly problems: string[];
}

export function watch(page: Page): Watched {
  const w: Watched = { requests: [], apiCalls: [], problems: [] };
  page.on('request', (r) => {
    w.requests.push(r.url());
    if (new URL(r.url()).pathname.startsWith('/api/')) {
      w.apiCalls.push({ url: r.url(), key: r.headers()['x-api-key'] ?? null });
    }
  });
  page.on('console', (m) => {
    if (m.type() === 'error' || /content security policy/i.test(m.text())) w.problems.push(m.text());
  });
  page.on('pageerror', (e) => w.problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => w.problems.push(`failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('response', (r) => {
    if (r.status() >= 400) w.problems.push(`HTTP ${r.status()} for ${r.url()}`);
  });
  return w;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` until it returns a value other than undefined/false, or fails after `ms`. */
export async function until<T>(
  what: string,
  ms: number,
  check: () => Promise<T | undefined | false>,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(100);
  }
}

export interface Traffic {
  readonly sent: { ok: number; failed: number };
  stop(): Promise<{ ok: number; failed: number }>;
}

/** `workers` loops of `POST /api/v1/request` for `url`, until stopped. */
export function startTraffic(base: string, url: string, workers = 2): Traffic {
  const sent = { ok: 0, failed: 0 };
  let stopped = false;
  const loop = async () => {
    while (!stopped) {
      try {
        const res = await fetch(`${base}/api/v1/request`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ url, timeout: 10 }),
        });
        await res.arrayBuffer();
        if (res.status === 200) sent.ok++;
        else sent.failed++;
      } catch {
        sent.failed++;
      }
      await sleep(20);
    }
  };
  const runs = Array.from({ length: workers }, loop);
  return {
    sent,
    stop: async () => {
      stopped = true;
      await Promise.all(runs);
      return sent;
    },
  };
}

export interface ApiAnswer<T> {
  status: number;
  data: T;
}

/** One API call; the envelope's `data` (null for 204 and errors). */
export async function api<T>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  key?: string,
): Promise<ApiAnswer<T>> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (key) headers['x-api-key'] = key;
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const parsed = text ? (JSON.parse(text) as { data?: T }) : {};
  return { status: res.status, data: (parsed.data ?? null) as T };
}

export interface ProxyView {
  id: string;
  url: string;
  country: string | null;
}

/** Every proxy of the pool (a test pool fits in one page). */
export async function listProxies(base: string, key?: string): Promise<ProxyView[]> {
  const r = await api<{ items: ProxyView[] }>(base, 'GET', '/api/v1/proxies?page_size=100', undefined, key);
  return r.data.items;
}

/** The row of the pool table whose URL cell is exactly `url`. */
/** The pool table's row of `url`: its row header is the URL, then the entry's safe label if it has one. */
export function rowOf(page: Page, url: string) {
  const name = new RegExp(`^${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}( .*)?$`);
  return page.locator('#pool-body tr', { has: page.getByRole('rowheader', { name }) });
}

/** The id of the proxy whose URL is `url`. */
export async function proxyId(base: string, url: string, key?: string): Promise<string> {
  const p = (await listProxies(base, key)).find((x) => x.url === url);
  assert.ok(p, `${url} is in the pool`);
  return p.id;
}

/** Nothing left loopback, nothing went wrong in the page. */
export function assertOffline(w: Watched, base: string, trap: TrapProxy): void {
  const off = w.requests.filter((u) => !u.startsWith(`${base}/`));
  assert.deepEqual(off, [], 'every request the page makes stays on the Rota origin');
  assert.deepEqual(trap.attempts, [], 'no connection attempt off loopback');
  assert.deepEqual(w.problems, [], 'no console error, CSP violation or failed request');
}
