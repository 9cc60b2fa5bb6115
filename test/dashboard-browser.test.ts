/**
 * The dashboard in headless Chromium against a real Rota (`node src/main.ts`), with real traffic through
 * loopback proxies: the page loads offline with no console error, shows the pool, shows a failing proxy's
 * breaker open within 5 s, its charts move while traffic flows, and strategy switch, add, import, remove
 * and breaker reset work by clicking and typing like a user (checked through the API). With auth on, a
 * wrong key gets a clear message and the right key loads the data. Screenshots go to test-output/
 * (and docs/dashboard.png when ROTA_UPDATE_DOCS_SCREENSHOT=1).
 */
import assert from 'node:assert/strict';
import { copyFile, mkdir } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { type RawFixture, startResetter } from './fixtures/misbehaving.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { GENEROUS_LIMITS } from './helpers/app.ts';
import {
  CHROMIUM_MISSING,
  launchChromium,
  type RunningRota,
  spawnRota,
  startTrapProxy,
  type TrapProxy,
} from './helpers/browser.ts';
import {
  api,
  assertOffline,
  CSP_LISTENER,
  listProxies,
  proxyId,
  rowOf,
  sleep,
  startTraffic,
  type Traffic,
  until,
  type Watched,
  watch,
} from './helpers/dashboard.ts';

const SKIP = CHROMIUM_MISSING;
const OUT = new URL('../test-output/', import.meta.url);
const DOCS_SHOT = new URL('../docs/dashboard.png', import.meta.url);
const KEY = 'dashboard-browser-test-key-0123456789';
/** The canvas as a data URL, to see it redrawn (the root tsconfig has no DOM types). */
const canvasPixels = (c: unknown) => (c as { toDataURL(): string }).toDataURL();
const ENV = { ...GENEROUS_LIMITS, ROTA_SSRF_ALLOW: '127.0.0.0/8', ROTA_BREAKER_FAILURE_THRESHOLD: '2' };

describe('dashboard in headless Chromium', { skip: SKIP }, () => {
  let rota: RunningRota;
  let secured: RunningRota;
  let target: TargetServer;
  let good: ForwardProxy[];
  let spare: ForwardProxy;
  let resetter: RawFixture;
  let pageTrap: TrapProxy;
  let sink: TrapProxy;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let seen: Watched;
  /** Runs from the breaker test to the screenshots, so that the charts have something to show. */
  let traffic: Traffic | undefined;
  const urlOf = (port: number) => `http://127.0.0.1:${port}`;

  before(async () => {
    await mkdir(OUT, { recursive: true });
    let a: ForwardProxy;
    let b: ForwardProxy;
    [rota, secured, target, a, b, spare, resetter, pageTrap, sink] = await Promise.all([
      spawnRota(ENV),
      spawnRota({ ...ENV, ROTA_REQUIRE_AUTH: 'true', ROTA_API_KEY: KEY }),
      startTarget(),
      startForwardProxy(),
      startForwardProxy(),
      startForwardProxy(),
      startResetter(),
      startTrapProxy(),
      startTrapProxy(),
    ]);
    good = [a, b];
    for (const p of [...good, resetter]) {
      assert.equal((await api(rota.base, 'POST', '/api/v1/proxies', { url: urlOf(p.port) })).status, 201);
    }
    browser = await launchChromium(sink.server);
    // Everything the page tries to fetch off loopback lands in pageTrap.
    context = await browser.newContext({
      viewport: { width: 1280, height: 800 },
      proxy: { server: pageTrap.server, bypass: '127.0.0.1' },
    });
    await context.addInitScript({ content: CSP_LISTENER });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    seen = watch(page);
  });

  after(async () => {
    await traffic?.stop();
    await browser?.close();
    await Promise.all([
      rota?.stop(),
      secured?.stop(),
      target?.close(),
      ...(good ?? []).map((p) => p.close()),
      spare?.close(),
      resetter?.close(),
      pageTrap?.close(),
      sink?.close(),
    ]);
  });

  it('loads offline with no console error and shows the pool', async () => {
    const res = await page.goto(`${rota.base}/dashboard`);
    assert.equal(res?.status(), 200);
    assert.match(res?.headers()['content-security-policy'] ?? '', /script-src 'self'; style-src 'self'/);
    for (const p of [...good, resetter]) await rowOf(page, urlOf(p.port)).waitFor({ timeout: 5_000 });
    await page.getByText('Live · updated').waitFor({ timeout: 5_000 });
    assert.equal(await page.locator('#s-total').textContent(), '3');
    await page.waitForLoadState('networkidle');
    assertOffline(seen, rota.base, pageTrap);
  });

  it("shows a failing proxy's breaker open within 5 s and moves the charts while traffic flows", async () => {
    const rateChart = page.locator('#chart-rate');
    const samplesBefore = Number(await rateChart.getAttribute('data-samples'));
    const canvasBefore = await page.locator('#chart-rate canvas').evaluate(canvasPixels);
    traffic = startTraffic(rota.base, target.url('/json').href);
    const started = Date.now();
    const row = rowOf(page, urlOf(resetter.port));
    await row.locator('.breaker-open').waitFor({ timeout: 5_000 });
    const shownAfter = Date.now() - started;
    assert.ok(shownAfter < 5_000, `breaker shown open after ${shownAfter} ms`);
    await page.locator('#events li.to-open', { hasText: urlOf(resetter.port) }).waitFor({ timeout: 2_000 });
    // The chart gains a sample a second, and requests/s shows the traffic.
    await until('the summary shows traffic', 6_000, async () => {
      const rps = Number((await page.locator('#s-rps').textContent()) ?? '0');
      return rps > 0;
    });
    const samplesAfter = Number(await rateChart.getAttribute('data-samples'));
    const lastT = Number(await rateChart.getAttribute('data-last-t'));
    assert.ok(samplesAfter > samplesBefore, `samples ${samplesBefore} → ${samplesAfter}`);
    assert.ok(Math.abs(lastT - Date.now() / 1000) < 5, 'the newest sample is seconds old');
    const canvasAfter = await page.locator('#chart-rate canvas').evaluate(canvasPixels);
    assert.notEqual(canvasAfter, canvasBefore, 'the canvas was redrawn');
    assert.ok(traffic.sent.ok > 10, `traffic flowed (${JSON.stringify(traffic.sent)})`);
    const breaker = await api<{ state: string }>(
      rota.base,
      'GET',
      `/api/v1/circuit-breakers/${await proxyId(rota.base, urlOf(resetter.port))}`,
    );
    assert.equal(breaker.data.state, 'open');
  });

  it('switches the rotation strategy', async () => {
    await page.getByLabel('Rotation strategy').selectOption('least-used');
    await page.getByRole('button', { name: 'Switch' }).click();
    await page.getByText('Rotation strategy is now least-used.').waitFor({ timeout: 5_000 });
    const cfg = await api<{ rotation_strategy: string }>(rota.base, 'GET', '/api/v1/config');
    assert.equal(cfg.data.rotation_strategy, 'least-used');
  });

  it('adds a proxy', async () => {
    await page.getByLabel('Proxy URL').fill(`http://user:s3cret-pw@127.0.0.1:${spare.port}`);
    await page.getByLabel('Country code (optional)').fill('de');
    await page.getByRole('button', { name: 'Add proxy' }).click();
    await page.getByText(`Added ${urlOf(spare.port)}.`).waitFor({ timeout: 5_000 });
    await rowOf(page, urlOf(spare.port)).waitFor({ timeout: 5_000 });
    const added = (await listProxies(rota.base)).find((p) => p.url === urlOf(spare.port));
    assert.equal(added?.country, 'DE');
    assert.ok(!(await page.content()).includes('s3cret-pw'), 'the password is not on the page');
  });

  it('imports a list', async () => {
    const list = [
      'http://127.0.0.2:9',
      '# a comment',
      'socks5://127.0.0.3:1080',
      '127.0.0.4:3128',
      urlOf(good[0]!.port),
    ];
    await page.getByLabel('Proxy list, one per line').fill(list.join('\n'));
    await page.getByRole('button', { name: 'Import' }).click();
    await page.getByText('Imported 3, 1 already present, 0 invalid.').waitFor({ timeout: 10_000 });
    const urls = (await listProxies(rota.base)).map((p) => p.url);
    for (const u of ['http://127.0.0.2:9', 'socks5://127.0.0.3:1080', 'http://127.0.0.4:3128']) {
      assert.ok(urls.includes(u), `${u} was imported`);
    }
    await rowOf(page, 'socks5://127.0.0.3:1080').waitFor({ timeout: 5_000 });
  });

  it('sorts by keyboard and filters on the server', async () => {
    const breakerHeader = page.locator('#pool-table th[data-sort="breaker"]');
    await breakerHeader.getByRole('button').focus();
    await page.keyboard.press('Enter');
    await until(
      'ascending',
      3_000,
      async () => (await breakerHeader.getAttribute('aria-sort')) === 'ascending',
    );
    await page.keyboard.press('Enter');
    await until(
      'descending',
      3_000,
      async () => (await breakerHeader.getAttribute('aria-sort')) === 'descending',
    );
    await until('open breakers first', 3_000, async () => {
      const first = await page.locator('#pool-body tr').first().locator('[class*="breaker-"]').textContent();
      return first === 'open';
    });
    await page.keyboard.press('Enter');
    await until(
      'creation order',
      3_000,
      async () => (await breakerHeader.getAttribute('aria-sort')) === null,
    );
    await page.getByLabel('Search').fill('socks5');
    await until('one row', 3_000, async () => (await page.locator('#pool-body tr').count()) === 1);
    await rowOf(page, 'socks5://127.0.0.3:1080').waitFor({ timeout: 1_000 });
    assert.match((await page.locator('#pg-info').textContent()) ?? '', /1 matching · 7 in the pool/);
    await page.getByLabel('Search').fill('');
    await until('all rows', 3_000, async () => (await page.locator('#pool-body tr').count()) === 7);
  });

  it('removes a proxy (two clicks)', async () => {
    const url = 'http://127.0.0.2:9';
    const id = (await listProxies(rota.base)).find((p) => p.url === url)?.id;
    assert.ok(id);
    await page.getByRole('button', { name: `Remove ${url}`, exact: true }).click();
    await page.getByRole('button', { name: `Confirm removing ${url}` }).click();
    await page.getByText(`Removed ${url}.`).waitFor({ timeout: 5_000 });
    assert.equal((await api(rota.base, 'GET', `/api/v1/proxies/${id}`)).status, 404);
    await until('the row is gone', 3_000, async () => (await rowOf(page, url).count()) === 0);
  });

  it('resets a breaker', async () => {
    const url = urlOf(resetter.port);
    const id = await proxyId(rota.base, urlOf(resetter.port));
    await page.getByRole('button', { name: `Reset breaker of ${url}` }).click();
    await page.getByText(`Breaker of ${url} reset: closed.`).waitFor({ timeout: 5_000 });
    // Traffic still flows, so the resetter's breaker opens again soon: the reset is checked by its event.
    const events = await api<{ proxy_id: string; reason: string }[]>(
      rota.base,
      'GET',
      '/api/v1/circuit-breakers/metrics',
    );
    assert.ok(events.data.some((e) => e.proxy_id === id && e.reason === 'manual_reset'));
    await page
      .locator('#events li.to-closed', { hasText: url })
      .getByText('reset by hand')
      .waitFor({ timeout: 5_000 });
  });

  it('shows the live request log (filters, an attempt timeline), the busiest hosts, health of checked proxies', async () => {
    const rows = page.locator('#req-body tr.req');
    await rows.first().waitFor({ timeout: 5_000 });
    // The calls that tried the resetting proxy: failed over to another, two attempts, the first its fault.
    const resetterId = await proxyId(rota.base, urlOf(resetter.port));
    await page.getByLabel('Proxy id').fill(resetterId);
    await page.getByLabel('Proxy id').press('Enter');
    const failover = page.locator('#req-body tr.req', {
      has: page.locator('td.num.opt', { hasText: /^2$/ }),
    });
    await until('a call with two attempts is listed', 10_000, async () => (await failover.count()) > 0);
    await failover.first().click();
    const steps = page.locator('#req-body tr.detail .timeline li');
    await steps.first().waitFor({ timeout: 5_000 });
    assert.equal(await steps.count(), 2);
    assert.match((await steps.nth(0).textContent()) ?? '', /^#1.*proxy error/);
    assert.match((await steps.nth(1).textContent()) ?? '', /^#2.*success · 200/);
    const target = await rows.first().locator('td.target').textContent();
    assert.ok(target?.startsWith('http://127.0.0.1:'), target ?? '');
    await page.getByLabel('Outcome').selectOption('error');
    await until('only failed calls are listed', 5_000, async () => {
      const outcomes = await page.locator('#req-body tr.req .badge').allTextContents();
      return outcomes.every((o) => o.startsWith('error'));
    });
    // Back to every outcome of that proxy, its timeline still open (as the screenshots show it).
    await page.getByLabel('Outcome').selectOption('');
    await steps.first().waitFor({ timeout: 5_000 });
    await page.locator('#hosts-body tr', { hasText: '127.0.0.1' }).waitFor({ timeout: 10_000 });
    // The summary's healthy share is of the proxies whose health is known.
    assert.match((await page.locator('#s-healthy').textContent()) ?? '', /^(\d+ of \d+|none checked)$/);
  });

  it('fits 1280x800 and a 390-px phone (screenshots)', async () => {
    // The last minute: the seconds of traffic of this test fill the charts.
    await page.getByLabel('Window').selectOption('60');
    await page.evaluate('window.scrollTo(0, 0)');
    await sleep(300);
    await page.screenshot({ path: new URL('dashboard-1280x800.png', OUT).pathname });
    const full = new URL('dashboard-1280-full.png', OUT);
    await page.screenshot({ path: full.pathname, fullPage: true });
    if (process.env.ROTA_UPDATE_DOCS_SCREENSHOT === '1') {
      await mkdir(new URL('.', DOCS_SHOT), { recursive: true });
      await copyFile(full, DOCS_SHOT);
    }
    await page.setViewportSize({ width: 390, height: 844 });
    await sleep(500);
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth');
    assert.ok(overflow <= 390, `no sideways scrolling of the page (width ${overflow})`);
    await page.screenshot({ path: new URL('dashboard-390x844.png', OUT).pathname, fullPage: true });
    // The request log with its open timeline, and the hosts, at the phone's width (looked at as such).
    await page.locator('#requests').screenshot({ path: new URL('dashboard-390-requests.png', OUT).pathname });
    await page.locator('#hosts').screenshot({ path: new URL('dashboard-390-hosts.png', OUT).pathname });
    await page.setViewportSize({ width: 1280, height: 800 });
    const sent = await traffic?.stop();
    traffic = undefined;
    assert.ok((sent?.ok ?? 0) > 10, `traffic flowed (${JSON.stringify(sent)})`);
    assertOffline(seen, rota.base, pageTrap);
  });

  it('with auth on: asks for the key, says clearly when it is wrong, loads with the right one', async () => {
    const id = await api<{ id: string }>(
      secured.base,
      'POST',
      '/api/v1/proxies',
      { url: urlOf(good[1]!.port) },
      KEY,
    );
    assert.equal(id.status, 201);
    const ctx = await browser.newContext({ proxy: { server: pageTrap.server, bypass: '127.0.0.1' } });
    await ctx.addInitScript({ content: CSP_LISTENER });
    try {
      const p = await ctx.newPage();
      const w = watch(p);
      assert.equal((await p.goto(`${secured.base}/dashboard`))?.status(), 200, 'the page needs no key');
      await p.getByLabel('API key', { exact: true }).waitFor({ timeout: 5_000 });
      assert.equal(w.apiCalls.length, 0, 'nothing is asked of the API before the key is given');
      await p.getByLabel('API key', { exact: true }).fill('not-the-key');
      await p.getByRole('button', { name: 'Unlock' }).click();
      await p.getByRole('alert').getByText('Wrong API key').waitFor({ timeout: 5_000 });
      assert.ok(await p.locator('#main').isHidden(), 'no data without the key');
      await p.getByLabel('API key', { exact: true }).fill(KEY);
      await p.getByRole('button', { name: 'Unlock' }).click();
      await rowOf(p, urlOf(good[1]!.port)).waitFor({ timeout: 5_000 });
      assert.ok(await p.locator('#auth').isHidden());
      assert.ok(!(await p.content()).includes(KEY), 'the key is not rendered');
      // Kept for the tab: a reload goes straight to the data.
      await p.reload();
      await rowOf(p, urlOf(good[1]!.port)).waitFor({ timeout: 5_000 });
      const afterWrong = w.apiCalls.slice(1);
      assert.ok(afterWrong.length > 2);
      assert.ok(
        afterWrong.every((c) => c.key === KEY),
        'every call after the right key carries it',
      );
      const problems = w.problems.filter((x) => !/401/.test(x));
      assert.deepEqual(problems, [], 'no other console error');
      assert.equal(w.problems.length, 2, 'the wrong key: one 401 response, one console line');
    } finally {
      await ctx.close();
    }
  });
});
