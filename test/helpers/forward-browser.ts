import { once } from 'node:events';
import { existsSync } from 'node:fs';
import https from 'node:https';
import type { Browser, BrowserContext } from 'playwright-core';
import type { TlsMaterial } from '../fixtures/certs.ts';
import { CHROMIUM, launchChromium, startTrapProxy, type TrapProxy } from './browser.ts';

/**
 * Headless Chromium (Debian's, driven by playwright-core) as a client of a forward proxy, and a small
 * HTTPS site for it to load.
 */

export interface Site {
  readonly origin: string;
  readonly port: number;
  /** What the page's script writes into #result once it fetched /data.json. */
  readonly token: string;
  /** Paths requested so far, in order. */
  readonly seen: string[];
  close(): Promise<void>;
}

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>Rota forward test</title><link rel="icon" href="data:,"></head>
<body><h1>Loaded through the proxy</h1><p id="result">pending</p><script src="/app.js"></script></body></html>`;
const SCRIPT = `fetch('/data.json').then((r) => r.json()).then((d) => {
  document.getElementById('result').textContent = d.message;
});`;

/** A loopback HTTPS site: `/` an HTML page whose script (`/app.js`) fetches `/data.json`. */
export async function startSite(tls: TlsMaterial): Promise<Site> {
  const token = `token-${Math.random().toString(36).slice(2, 10)}`;
  const seen: string[] = [];
  const files: Record<string, [string, string]> = {
    '/': ['text/html; charset=utf-8', PAGE],
    '/app.js': ['text/javascript', SCRIPT],
    '/data.json': ['application/json', JSON.stringify({ message: token })],
  };
  const srv = https.createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const path = req.url ?? '/';
    seen.push(path);
    const file = files[path];
    const [type, body] = file ?? ['text/plain', 'not found'];
    res.writeHead(file ? 200 : 404, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const addr = srv.address();
  if (addr === null || typeof addr === 'string') throw new Error('site: no port');
  return {
    origin: `https://127.0.0.1:${addr.port}`,
    port: addr.port,
    token,
    seen,
    close: async () => {
      srv.closeAllConnections();
      srv.close();
      await once(srv, 'close');
    },
  };
}

export interface Visit {
  readonly status: number | null;
  /** #result's text once it left `pending` (the script ran and its fetch came back). */
  readonly result: string;
  readonly heading: string;
  /** Console errors, page errors, failed requests and answers >= 400. */
  readonly problems: readonly string[];
}

/** Credentials, when given, answer the proxy's 407 challenge (Chromium never sends them unasked). */
export interface BrowserProxy {
  readonly server: string;
  readonly username?: string;
  readonly password?: string;
}

export interface ProxiedBrowser {
  /** Loads `url` in a fresh context whose pages use `proxy` (`http://...` or `socks5://...`). */
  visit(proxy: BrowserProxy, url: string): Promise<Visit>;
  /** Requests Chromium itself (not a page) tried to make; they land in a trap, never off the machine. */
  readonly background: readonly string[];
  close(): Promise<void>;
}

/**
 * Chromium whose pages use the proxy each visit names for everything, loopback included (`<-loopback>`
 * undoes Chromium's built-in loopback bypass), and accept the test-time certificate. The browser's own
 * background traffic goes to a trap proxy instead, so that only the pages' requests reach the proxy.
 */
export async function launchProxiedBrowser(): Promise<ProxiedBrowser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (scripts/system-deps.sh does it)`);
  }
  const sink: TrapProxy = await startTrapProxy();
  let browser: Browser;
  try {
    browser = await launchChromium(sink.server);
  } catch (err) {
    await sink.close();
    throw err;
  }
  return {
    background: sink.attempts,
    visit: async (proxy, url) => {
      const context = await browser.newContext({
        ignoreHTTPSErrors: true,
        proxy: { ...proxy, bypass: '<-loopback>' },
      });
      try {
        return await visit(context, url);
      } finally {
        await context.close();
      }
    },
    close: async () => {
      await browser.close();
      await sink.close();
    },
  };
}

async function visit(context: BrowserContext, url: string): Promise<Visit> {
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()} for ${r.url()}`);
  });
  try {
    const res = await page.goto(url, { timeout: 20_000 });
    const result = page.locator('#result');
    if (res?.ok()) {
      // A string: tsconfig has no DOM types, and this runs in the page.
      await page.waitForFunction("document.getElementById('result').textContent !== 'pending'", null, {
        timeout: 10_000,
      });
    }
    return {
      status: res?.status() ?? null,
      result: res?.ok() ? ((await result.textContent()) ?? '') : '',
      heading: res?.ok() ? ((await page.locator('h1').textContent()) ?? '') : '',
      problems,
    };
  } catch (err) {
    problems.push(`goto: ${err instanceof Error ? err.message : String(err)}`);
    return { status: null, result: '', heading: '', problems };
  } finally {
    await page.close();
  }
}
