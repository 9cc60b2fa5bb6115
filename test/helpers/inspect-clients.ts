import { createHash, createPublicKey } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium, startTrapProxy, type TrapProxy } from './browser.ts';
import { run } from './forward-clients.ts';

/**
 * Real clients of an inspected tunnel that trust Rota's CA their own way: Scrapy (PyPI, in a virtual
 * environment under .tools/ that scripts/system-deps.sh makes) with a context factory verifying against
 * the CA, and headless Chromium told the CA's public key (--ignore-certificate-errors-spki-list: a chain
 * holding that key is accepted, any other certificate error still refused).
 */

/** Scrapy's Python: scripts/system-deps.sh installs Scrapy there. */
export const SCRAPY_PYTHON = resolve(
  import.meta.dirname,
  '..',
  '..',
  '.tools',
  'scrapy-venv',
  'bin',
  'python',
);

export interface ScrapyPage {
  readonly url: string;
  /** 0 when the download failed (then `error` says why). */
  readonly status: number;
  readonly proxyId: string;
  /** Hex SHA-256 of the body as Scrapy received it. */
  readonly sha256: string;
  readonly error?: string;
}

// Scrapy's own context factory verifies no certificate: this one verifies the target against the CA
// file given (Twisted's optionsForClientTLS: chain and host name, IP addresses included).
const SCRAPY_SCRIPT = `
import hashlib, json, sys
from scrapy import Request, Spider
from scrapy.core.downloader.contextfactory import ScrapyClientContextFactory
from scrapy.crawler import CrawlerProcess
from twisted.internet.ssl import Certificate, optionsForClientTLS

a = json.load(open(sys.argv[1]))
CA = Certificate.loadPEM(open(a['ca'], 'rb').read())


class RotaCaContextFactory(ScrapyClientContextFactory):
    def creatorForNetloc(self, hostname, port):
        return optionsForClientTLS(hostname.decode('ascii'), trustRoot=CA)


results = []


class Pages(Spider):
    name = 'pages'

    async def start(self):
        for url in a['urls']:
            yield Request(url, meta={'proxy': a['proxy']}, dont_filter=True, errback=self.failed)

    def parse(self, response):
        results.append({'url': response.url, 'status': response.status,
                        'proxyId': response.headers.get('X-Rota-Proxy-Id', b'').decode(),
                        'sha256': hashlib.sha256(response.body).hexdigest()})

    def failed(self, failure):
        results.append({'url': failure.request.url, 'status': 0, 'proxyId': '', 'sha256': '',
                        'error': repr(failure.value)})


process = CrawlerProcess(settings={
    'CONCURRENT_REQUESTS': a['concurrency'],
    'CONCURRENT_REQUESTS_PER_DOMAIN': a['concurrency'],
    'DOWNLOADER_CLIENTCONTEXTFACTORY': '__main__.RotaCaContextFactory',
    'DOWNLOAD_TIMEOUT': 20,
    'RETRY_ENABLED': False,
    'ROBOTSTXT_OBEY': False,
    'COOKIES_ENABLED': False,
    'TELNETCONSOLE_ENABLED': False,
    'LOG_LEVEL': 'WARNING',
})
process.crawl(Pages)
process.start()
json.dump(results, open(a['out'], 'w'))
`;

/** `urls` crawled by a CrawlerProcess at `concurrency` through `proxy`, verifying against `ca`. */
export async function scrapyCrawl(
  urls: readonly string[],
  opts: { readonly proxy: string; readonly ca: string; readonly concurrency: number },
): Promise<ScrapyPage[]> {
  if (!existsSync(SCRAPY_PYTHON)) {
    throw new Error(
      `${SCRAPY_PYTHON} is missing: scripts/system-deps.sh installs Scrapy into .tools/scrapy-venv`,
    );
  }
  const dir = await mkdtemp(join(tmpdir(), 'rota-scrapy-'));
  try {
    const [ca, out, args, script] = ['ca.pem', 'out.json', 'args.json', 'crawl.py'].map((f) => join(dir, f));
    await writeFile(ca ?? '', opts.ca);
    await writeFile(script ?? '', SCRAPY_SCRIPT);
    await writeFile(args ?? '', JSON.stringify({ ...opts, urls, ca, out }));
    const r = await run(SCRAPY_PYTHON, [script ?? '', args ?? ''], '', 120_000);
    if (r.code !== 0) throw new Error(`scrapy failed (${r.code}): ${r.stderr}`);
    return JSON.parse(await readFile(out ?? '', 'utf8')) as ScrapyPage[];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The base64 SHA-256 of a certificate's SubjectPublicKeyInfo, as Chromium's SPKI list wants it. */
export function spkiHash(certPem: string): string {
  const der = createPublicKey(certPem).export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(der).digest('base64');
}

export interface TrustingBrowser {
  readonly browser: Browser;
  /** Requests Chromium itself tried to make (not a page's): they land in a trap. */
  readonly background: readonly string[];
  close(): Promise<void>;
}

/** Headless Chromium accepting chains that hold `caPem`'s key; pages choose their proxy per context. */
export async function launchTrustingChromium(caPem: string): Promise<TrustingBrowser> {
  const trap: TrapProxy = await startTrapProxy();
  try {
    const browser = await launchChromium(trap.server, [
      `--ignore-certificate-errors-spki-list=${spkiHash(caPem)}`,
    ]);
    return {
      browser,
      background: trap.attempts,
      close: async () => {
        await browser.close();
        await trap.close();
      },
    };
  } catch (err) {
    await trap.close();
    throw err;
  }
}
