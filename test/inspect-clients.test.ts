import assert from 'node:assert/strict';
import { readdirSync, readlinkSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { type TlsMaterial, testTls } from './fixtures/certs.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { type InspectSite, pageBody, sha256, startInspectSite } from './fixtures/inspect-site.ts';
import { addUpstream, type ListeningApp, listeningApp, waitFor } from './helpers/forward.ts';
import { pythonSession, run } from './helpers/forward-clients.ts';
import { launchTrustingChromium, scrapyCrawl } from './helpers/inspect-clients.ts';
import { freePort } from './helpers/real-proxies.ts';

/*
 * Real clients through an inspected tunnel, each trusting Rota's CA its own way: Python requests (a
 * Session, verify=CA file), Scrapy at concurrency 16 (a context factory verifying against the CA) and
 * headless Chromium (the CA's key in its SPKI list). Each request inside a kept-alive connection is one
 * pick of the strategy (round-robin: both proxies take requests), bodies arrive intact, a session keeps
 * one proxy, a dead proxy is failed over, and the test process's sockets go back to where they were.
 */

let material: TlsMaterial;
let site: InspectSite;
let proxies: ForwardProxy[];
let t: ListeningApp;
let ids: string[];
let ca: string;
/** Open sockets before any client ran (the servers' listening ones, the runner's own). */
let fdBaseline: number;
let baselineTable: Map<string, string>;
/** Sockets right after the Scrapy crawl: upstream connections still kept alive. */
let fdAfterCrawl = 0;

/** What each open descriptor of this process is (`socket:[…]`, `pipe:[…]`, a path), by number. */
function fdTable(): Map<string, string> {
  const table = new Map<string, string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      table.set(fd, readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      // closed between the listing and the read (the listing's own descriptor among them)
    }
  }
  return table;
}
/**
 * Open sockets: what a connection left open holds. Other descriptors (an event loop's epoll, io_uring and
 * pipes, made when a thread first needs them) are not per connection and are only reported.
 */
const sockets = (table = fdTable()) => [...table.values()].filter((v) => v.startsWith('socket:')).length;
const proxyUrl = (app: ListeningApp, user = '') => `http://${user}127.0.0.1:${app.httpPort}`;
const pages = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${site.origin}/page/${prefix}/${i}`);
const pathOf = (url: string) => new URL(url).pathname;
const okShakes = () => t.services.listeners.metrics.handshakes.ok;

/** Requests per proxy in GET stats (services.stats), by proxy id. */
function perProxy(): Map<string, number> {
  return new Map(t.services.stats.snapshot().proxy_stats.map((p) => [p.proxy_id, p.requests]));
}

before(async () => {
  material = await testTls();
  site = await startInspectSite(material);
  proxies = await Promise.all([
    startForwardProxy({ egress: '127.0.0.3' }),
    startForwardProxy({ egress: '127.0.0.4' }),
  ]);
  t = await listeningApp({ ROTA_INSPECT_HOSTS: '127.0.0.1' }, { upstreamTls: { ca: material.ca } });
  ids = [];
  for (const p of proxies) ids.push(await addUpstream(t, { url: `http://127.0.0.1:${p.port}` }));
  ca = await t.services.inspection.authority.caPem();
  // A first child process makes libuv's lasting descriptors (its SIGCHLD pipe): before the baseline.
  await run('/usr/bin/python3', ['-c', 'pass']);
  baselineTable = fdTable();
  fdBaseline = sockets(baselineTable);
});

after(async () => {
  await t.close();
  await Promise.all([site.close(), ...proxies.map((p) => p.close())]);
});

describe('real clients through an inspected tunnel', () => {
  test('Python requests.Session: ten requests on one connection, both proxies, bodies intact', async () => {
    const shakes = okShakes();
    const urls = pages('py', 10);
    const answers = await pythonSession(urls, { proxy: proxyUrl(t), ca });
    assert.equal(answers.length, 10);
    for (const [i, a] of answers.entries()) {
      assert.equal(a.status, 200, a.error ?? '');
      assert.equal(a.sha256, sha256(pageBody(pathOf(urls[i] ?? ''))), 'the body arrived intact');
    }
    assert.deepEqual(new Set(answers.map((a) => a.headers['x-rota-proxy-id'])), new Set(ids));
    assert.equal(okShakes() - shakes, 1, 'one TLS connection with Rota carried the ten requests');
  });

  test('Scrapy at concurrency 16, 50 pages: 50 picks in the per-proxy stats, far fewer tunnels', async () => {
    const before = perProxy();
    const shakes = okShakes();
    const urls = pages('scrapy', 50);
    const got = await scrapyCrawl(urls, { proxy: proxyUrl(t), ca, concurrency: 16 });
    fdAfterCrawl = sockets();
    assert.equal(got.length, 50);
    for (const p of got) {
      assert.equal(p.status, 200, p.error ?? '');
      assert.equal(p.sha256, sha256(pageBody(pathOf(p.url))), `${p.url} arrived intact`);
    }
    assert.deepEqual(new Set(got.map((p) => pathOf(p.url))), new Set(urls.map(pathOf)));
    assert.deepEqual(new Set(got.map((p) => p.proxyId)), new Set(ids));
    const after = perProxy();
    const picks = ids.map((id) => (after.get(id) ?? 0) - (before.get(id) ?? 0));
    assert.equal(
      picks.reduce((a, b) => a + b, 0),
      50,
      `requests per proxy: ${picks}`,
    );
    const tunnels = okShakes() - shakes;
    assert.ok(tunnels >= 1 && tunnels <= 16, `inspected connections: ${tunnels}`);
  });

  test('Scrapy verifies: with another CA than Rota’s it refuses the connection', async () => {
    const refused = t.services.listeners.metrics.handshakes.client_refused;
    const got = await scrapyCrawl(pages('scrapy-wrong-ca', 1), {
      proxy: proxyUrl(t),
      ca: material.ca,
      concurrency: 1,
    });
    assert.equal(got[0]?.status, 0);
    assert.match(got[0]?.error ?? '', /certificate verify failed|SSL/i);
    assert.ok(t.services.listeners.metrics.handshakes.client_refused > refused);
  });

  test('Chromium with the CA’s key trusted: a page and its subresources, every answer through Rota', async () => {
    const b = await launchTrustingChromium(ca);
    try {
      const context = await b.browser.newContext({ proxy: { server: proxyUrl(t), bypass: '<-loopback>' } });
      const page = await context.newPage();
      const problems: string[] = [];
      const proxyIds: string[] = [];
      page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
      page.on('response', (r) => {
        if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.url()}`);
        proxyIds.push(r.headers()['x-rota-proxy-id'] ?? '');
      });
      const res = await page.goto(`${site.origin}/`, { timeout: 20_000 });
      assert.equal(res?.status(), 200);
      await page.waitForFunction("document.getElementById('result').textContent !== 'pending'", null, {
        timeout: 10_000,
      });
      assert.equal(await page.locator('#result').textContent(), sha256(pageBody('/page/browser')));
      assert.equal(await page.locator('#data').textContent(), 'data through rota');
      // Strings: tsconfig has no DOM types, and these run in the page.
      assert.equal(
        await page.evaluate("getComputedStyle(document.querySelector('h1')).color"),
        'rgb(0, 119, 204)',
        'the stylesheet applied',
      );
      assert.equal(
        await page.evaluate("document.getElementById('logo').naturalWidth"),
        8,
        'the image decoded',
      );
      await context.close();
      assert.deepEqual(problems, []);
      assert.equal(proxyIds.length, 6, 'the page, its stylesheet, script, image, JSON and /page/browser');
      assert.deepEqual(new Set(proxyIds), new Set(ids), 'every answer is a pick; both proxies took some');
    } finally {
      await b.close();
    }
  });

  test('Chromium trusting another key refuses Rota’s certificate', async () => {
    const b = await launchTrustingChromium(material.ca);
    try {
      const context = await b.browser.newContext({ proxy: { server: proxyUrl(t), bypass: '<-loopback>' } });
      const page = await context.newPage();
      const err = await page.goto(`${site.origin}/`, { timeout: 20_000 }).then(
        () => null,
        (e: unknown) => String(e),
      );
      await context.close();
      assert.match(err ?? 'loaded', /ERR_CERT_AUTHORITY_INVALID/);
    } finally {
      await b.close();
    }
  });

  test('a session (username key or X-Rota-Session inside the tunnel) keeps one proxy', async () => {
    const byUser = await pythonSession(pages('sess-user', 8), {
      proxy: proxyUrl(t, 'scraper-session-a1:x@'),
      ca,
    });
    const byHeader = await pythonSession(pages('sess-header', 8), {
      proxy: proxyUrl(t),
      ca,
      headers: { 'X-Rota-Session': 'b2' },
    });
    for (const answers of [byUser, byHeader]) {
      for (const a of answers) assert.equal(a.status, 200, a.error ?? '');
      const used = new Set(answers.map((a) => a.headers['x-rota-proxy-id']));
      assert.equal(used.size, 1, `one proxy for the session: ${[...used]}`);
    }
  });

  test('one of two proxies dead (a closed port): every request still 200 through the live one', async () => {
    const live = proxies[0];
    assert.ok(live);
    const other = await listeningApp(
      { ROTA_INSPECT_HOSTS: '127.0.0.1' },
      { upstreamTls: { ca: material.ca } },
    );
    try {
      const liveId = await addUpstream(other, { url: `http://127.0.0.1:${live.port}` });
      const deadId = await addUpstream(other, { url: `http://127.0.0.1:${await freePort()}` });
      const otherCa = await other.services.inspection.authority.caPem();
      const urls = pages('failover', 10);
      const answers = await pythonSession(urls, { proxy: proxyUrl(other), ca: otherCa });
      for (const [i, a] of answers.entries()) {
        assert.equal(a.status, 200, a.error ?? '');
        assert.equal(a.headers['x-rota-proxy-id'], liveId);
        assert.equal(a.sha256, sha256(pageBody(pathOf(urls[i] ?? ''))));
      }
      const dead = other.services.stats.snapshot().proxy_stats.find((p) => p.proxy_id === deadId);
      assert.ok((dead?.failures ?? 0) >= 1, 'the dead proxy was tried, and failed over');
    } finally {
      await other.close();
    }
  });

  test('after the clients closed, the process’s sockets go back to the baseline', async () => {
    let now = sockets();
    await waitFor(() => {
      now = sockets();
      return now <= fdBaseline;
    }, 15_000).catch(() => {});
    assert.ok(
      fdAfterCrawl > fdBaseline,
      `the crawl held sockets (${fdAfterCrawl}): the check means something`,
    );
    const added = [...fdTable()].filter(([fd, what]) => baselineTable.get(fd) !== what);
    assert.ok(
      now <= fdBaseline,
      `sockets: ${now}, baseline ${fdBaseline}; descriptors new since: ${added.map((a) => a.join(' ')).join(', ')}`,
    );
  });
});
