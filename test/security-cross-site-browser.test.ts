/**
 * Cross-site control in headless Chromium against a real Rota (`node src/main.ts`, auth off, the
 * default). A page from another loopback origin (127.0.0.2) sends `no-cors` text/plain POSTs, which
 * need no preflight, to import a proxy and to reset an open breaker: Rota answers 403 and nothing
 * changes. A page whose name resolves to 127.0.0.1 (the browser's resolver is told so: DNS rebinding)
 * gets 421 for its reads and its same-origin writes. From Rota's own origin the same import works.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { GENEROUS_LIMITS } from './helpers/app.ts';
import {
  CHROMIUM_MISSING,
  launchChromium,
  type RunningRota,
  spawnRota,
  startTrapProxy,
  type TrapProxy,
} from './helpers/browser.ts';
import { api, listProxies, until } from './helpers/dashboard.ts';

const REBOUND = 'attacker.example';
const DEAD_PROXY = 'http://127.0.0.1:9';

/** The attacker's site: one page with no script of its own (the test runs the attack in it). */
async function startAttackerSite(): Promise<{ origin: string; close(): Promise<void> }> {
  const srv: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>cute cats</title><p>cute cats</p>');
  });
  srv.listen(0, '127.0.0.2');
  await once(srv, 'listening');
  const addr = srv.address();
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  return {
    origin: `http://127.0.0.2:${addr.port}`,
    close: async () => {
      srv.closeAllConnections();
      srv.close();
      await once(srv, 'close');
    },
  };
}

/** Rota's request log lines (level info). */
function requestLines(output: string): { route?: string; status?: number }[] {
  const out: { route?: string; status?: number; msg?: string }[] = [];
  for (const line of output.split('\n')) {
    try {
      out.push(JSON.parse(line));
    } catch {
      // Not a JSON line (or the first, cut one).
    }
  }
  return out.filter((l) => l.msg === 'request');
}

/** What the page sends: a simple request, so the browser sends it without asking Rota first. */
async function noCorsPost(page: Page, url: string, body: string): Promise<void> {
  await page.evaluate(
    async ([u, b]) => {
      await fetch(u!, {
        method: 'POST',
        mode: 'no-cors',
        headers: { 'content-type': 'text/plain' },
        body: b!,
      });
    },
    [url, body],
  );
}

describe('cross-site control in headless Chromium', { skip: CHROMIUM_MISSING }, () => {
  let rota: RunningRota;
  let attacker: Awaited<ReturnType<typeof startAttackerSite>>;
  let sink: TrapProxy;
  let browser: Browser;
  let page: Page;
  let deadId: string;
  /** Status of every answer the browser got from Rota, by method and path. */
  const answers: string[] = [];

  before(async () => {
    [rota, attacker, sink] = await Promise.all([
      spawnRota({
        ...GENEROUS_LIMITS,
        ROTA_LOG_LEVEL: 'info',
        ROTA_SSRF_ALLOW: '127.0.0.0/8',
        ROTA_BREAKER_FAILURE_THRESHOLD: '1',
      }),
      startAttackerSite(),
      startTrapProxy(),
    ]);
    const added = await api<{ id: string }>(rota.base, 'POST', '/api/v1/proxies', { url: DEAD_PROXY });
    assert.equal(added.status, 201);
    deadId = added.data.id;
    // One call through the dead proxy opens its breaker (threshold 1).
    await api(rota.base, 'POST', '/api/v1/request', { url: `${rota.base}/api/v1/health`, method: 'GET' });
    const breaker = await api<{ state: string }>(rota.base, 'GET', `/api/v1/circuit-breakers/${deadId}`);
    assert.equal(breaker.data.state, 'open');
    browser = await launchChromium(sink.server, [
      `--host-resolver-rules=MAP ${REBOUND} 127.0.0.1`,
      `--proxy-bypass-list=${REBOUND}`,
    ]);
    page = await browser.newPage();
    page.setDefaultTimeout(10_000);
    page.on('response', (res) => {
      const u = new URL(res.url());
      if (u.port === String(rota.port))
        answers.push(`${res.request().method()} ${u.host}${u.pathname} ${res.status()}`);
    });
  });

  after(async () => {
    await browser?.close();
    await Promise.all([rota?.stop(), attacker?.close(), sink?.close()]);
  });

  it('refuses a no-cors import and breaker reset from another loopback origin; nothing changes', async () => {
    await page.goto(`${attacker.origin}/`);
    const importUrl = `${rota.base}/api/v1/proxies/import`;
    const resetUrl = `${rota.base}/api/v1/circuit-breakers/${deadId}/reset`;
    await noCorsPost(page, importUrl, '1.2.3.4:8080');
    await noCorsPost(page, resetUrl, '');
    const host = new URL(rota.base).host;
    assert.ok(answers.includes(`POST ${host}/api/v1/proxies/import 403`), answers.join('\n'));
    assert.ok(
      answers.includes(`POST ${host}/api/v1/circuit-breakers/${deadId}/reset 403`),
      answers.join('\n'),
    );
    assert.deepEqual(
      (await listProxies(rota.base)).map((p) => p.url),
      [DEAD_PROXY],
      'the pool is unchanged',
    );
    const breaker = await api<{ state: string }>(rota.base, 'GET', `/api/v1/circuit-breakers/${deadId}`);
    assert.equal(breaker.data.state, 'open', 'the breaker is still open');
    const refused = () => requestLines(rota.output()).filter((l) => l.status === 403);
    await until('Rota logs both answers', 5_000, async () => refused().length >= 2);
    assert.deepEqual(
      refused().map((l) => l.route),
      ['/api/v1/proxies/import', '/api/v1/circuit-breakers/:proxy_id/reset'],
      'Rota itself answered both with 403',
    );
  });

  it('answers 421 to a rebound name, for reads and same-origin writes alike', async () => {
    const rebound = `http://${REBOUND}:${rota.port}`;
    const res = await page.goto(`${rebound}/api/v1/proxies`);
    assert.equal(res?.status(), 421);
    assert.equal((await res?.json())?.error?.code, 'MISDIRECTED_REQUEST');
    const write = await page.evaluate(async (u) => {
      const r = await fetch(u, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: '1.2.3.4:8080',
      });
      return r.status;
    }, `${rebound}/api/v1/proxies/import`);
    assert.equal(write, 421);
    assert.deepEqual(
      (await listProxies(rota.base)).map((p) => p.url),
      [DEAD_PROXY],
    );
  });

  it("accepts the same request from Rota's own origin", async () => {
    await page.goto(`${rota.base}/dashboard`);
    await noCorsPost(page, `${rota.base}/api/v1/proxies/import`, '1.2.3.4:8080');
    assert.ok(
      answers.includes(`POST ${new URL(rota.base).host}/api/v1/proxies/import 200`),
      answers.join('\n'),
    );
    const urls = (await listProxies(rota.base)).map((p) => p.url);
    assert.ok(urls.includes('http://1.2.3.4:8080'), urls.join(', '));
  });
});
