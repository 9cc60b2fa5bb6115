import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import {
  CHROMIUM_MISSING,
  launchChromium,
  type RunningRota,
  spawnRota,
  startTrapProxy,
  type TrapProxy,
} from './helpers/browser.ts';

const SKIP = CHROMIUM_MISSING;

// Logged by the page itself, so violations show up even when the browser reports them only as events.
const CSP_LISTENER = `document.addEventListener('securitypolicyviolation', (e) => {
  console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + e.blockedURI);
});`;

interface Operation {
  method: string;
  path: string;
  operationId: string;
  summary: string;
  deprecated: boolean;
  tags: string[];
}

interface Visit {
  page: Page;
  requests: string[];
  problems: string[];
}

interface OpenApiOperation {
  operationId?: string;
  summary?: string;
  deprecated?: boolean;
  tags?: string[];
}
interface OpenApiPaths {
  paths: Record<string, Record<string, OpenApiOperation>>;
}

function operationsOf(doc: OpenApiPaths): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      ops.push({
        method,
        path,
        operationId: op.operationId ?? '',
        summary: op.summary ?? '',
        deprecated: op.deprecated === true,
        tags: op.tags ?? [],
      });
    }
  }
  return ops;
}

/** `get /api/v1/proxies getProxies`: what one rendered operation must show. */
const shownAs = (o: { method: string; path: string; operationId: string }) =>
  `${o.method.toLowerCase()} ${o.path} ${o.operationId}`;

/**
 * What Swagger UI shows, one entry per operation block. Method, path and id are read inside each block
 * (a deprecated operation's path has another class, so parallel lists over the page would drift apart),
 * and the path from `data-path`, free of the line-break hints in its text.
 */
async function swaggerOperations(page: Page): Promise<string[]> {
  const out: string[] = [];
  for (const block of await page.locator('.opblock').all()) {
    const method = (await block.locator('.opblock-summary-method').textContent()) ?? '';
    const path = (await block.locator('.opblock-summary [data-path]').getAttribute('data-path')) ?? '';
    const operationId = (await block.locator('.opblock-summary-operation-id').textContent()) ?? '';
    out.push(shownAs({ method: method.trim(), path, operationId: operationId.trim() }));
  }
  return out;
}

/** Opens every collapsed tag section, so that every operation block is in the DOM. */
async function expandAllTags(page: Page, tags: number): Promise<void> {
  const sections = page.locator('.opblock-tag-section');
  await sections.nth(tags - 1).waitFor({ timeout: 15_000 });
  for (const section of await sections.all()) {
    const open = /\bis-open\b/.test((await section.getAttribute('class')) ?? '');
    if (!open) await section.locator('.opblock-tag').first().click();
  }
}

describe('docs in headless Chromium, offline', { skip: SKIP }, () => {
  let rota: RunningRota;
  let browser: Browser;
  let pageTrap: TrapProxy;
  let browserSink: TrapProxy;
  let context: BrowserContext;
  let ops: Operation[];

  before(async () => {
    // With auth on, the docs must still load without a key (docs/decisions.md, "Auth and rate limits").
    [rota, pageTrap, browserSink] = await Promise.all([
      spawnRota({ ROTA_REQUIRE_AUTH: 'true', ROTA_API_KEY: 'docs-browser-test-key-0123456789' }),
      startTrapProxy(),
      startTrapProxy(),
    ]);
    // Chromium's own background traffic (updates, sign-in) is not the docs' doing; it goes to a sink so
    // that nothing leaves the machine, and is not asserted on.
    browser = await launchChromium(browserSink.server);
    // Everything the pages (and their workers) try to fetch off loopback lands in pageTrap.
    context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      proxy: { server: pageTrap.server, bypass: '127.0.0.1' },
    });
    await context.addInitScript({ content: CSP_LISTENER });
    const res = await fetch(`${rota.base}/openapi.json`);
    assert.equal(res.status, 200);
    ops = operationsOf((await res.json()) as OpenApiPaths);
    assert.ok(ops.length > 0);
  });

  after(async () => {
    await browser?.close();
    await Promise.all([rota?.stop(), pageTrap?.close(), browserSink?.close()]);
  });

  async function visit(path: string): Promise<Visit> {
    const page = await context.newPage();
    const requests: string[] = [];
    const problems: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('console', (m) => {
      if (m.type() === 'error' || /content security policy/i.test(m.text())) problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
    page.on('response', (r) => {
      if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.url()}`);
    });
    const res = await page.goto(`${rota.base}${path}`);
    assert.equal(res?.status(), 200, `${path} without an API key`);
    return { page, requests, problems };
  }

  function assertOffline(v: Visit): void {
    const origin = `${rota.base}/`;
    const offLoopback = v.requests.filter(
      (u) => !u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith(`blob:${origin}`),
    );
    assert.deepEqual(offLoopback, [], 'every request the page makes stays on the Rota origin');
    assert.deepEqual(pageTrap.attempts, [], 'no connection attempt off loopback');
    assert.deepEqual(v.problems, [], 'no console errors, CSP violations or failed requests');
  }

  it('Swagger UI at /docs renders every operation', async () => {
    const v = await visit('/docs');
    await expandAllTags(v.page, new Set(ops.flatMap((o) => (o.tags.length > 0 ? o.tags : ['default']))).size);
    await v.page
      .locator('.opblock')
      .nth(ops.length - 1)
      .waitFor({ timeout: 15_000 });
    const shown = await swaggerOperations(v.page);
    assert.deepEqual(shown.sort(), ops.map(shownAs).sort(), 'each operation exactly once');
    assert.ok(shown.includes('get /api/v1/proxies getProxies'));
    assert.ok(shown.includes('get /metrics/retry getMetricsRetry'), 'unversioned metrics are documented');
    for (const op of ops.filter((o) => o.deprecated)) {
      const block = v.page.locator(`.opblock.opblock-deprecated:has([data-path="${op.path}"])`);
      assert.equal(await block.count(), 1, `${op.method} ${op.path} is shown as deprecated`);
    }
    // Let late requests (favicon, lazy chunks) happen before judging.
    await v.page.waitForLoadState('networkidle');
    await v.page.screenshot({ path: '/tmp/rota-docs.png' });
    assertOffline(v);
    assert.ok(
      v.requests.some((u) => u.endsWith('/docs/json')),
      'the UI fetched the document',
    );
    await v.page.close();
  });

  it('ReDoc at /redoc renders every operation', async () => {
    const v = await visit('/redoc');
    const first = ops[0]!;
    await v.page.locator(`[data-section-id="operation/${first.operationId}"]`).waitFor({ timeout: 15_000 });
    for (const op of ops) {
      const section = v.page.locator(`[data-section-id="operation/${op.operationId}"]`);
      assert.equal(await section.count(), 1, `${op.method} ${op.path} has a section`);
      // ReDoc appends a "Deprecated" badge to the heading of a deprecated operation.
      const heading = ((await section.locator('h2').first().textContent()) ?? '').replace(/\s+/g, ' ').trim();
      assert.equal(
        heading,
        op.deprecated ? `${op.summary} Deprecated` : op.summary,
        `${op.operationId} heading`,
      );
    }
    // Tags start collapsed, so their entries are in the menu but not all visible.
    const menu = (await v.page.locator('.menu-content').textContent()) ?? '';
    for (const op of ops) assert.ok(menu.includes(op.summary), `menu lists "${op.summary}"`);
    await v.page.waitForLoadState('networkidle');
    await v.page.screenshot({ path: '/tmp/rota-redoc.png' });
    assertOffline(v);
    assert.ok(
      v.requests.some((u) => u.endsWith('/openapi.json')),
      'ReDoc fetched the document',
    );
    await v.page.close();
  });
});
