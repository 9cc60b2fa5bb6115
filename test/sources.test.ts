/**
 * Proxy sources end to end: a loopback HTTP server in this test serves lists in each format and misbehaves
 * in each way a source can (garbage, never answering, streaming forever, redirecting inwards); Rota fetches
 * through its real SSRF rules and health checker (fixture forward proxies as the good proxies, a closed
 * port as a bad one). Persistence is checked across a restart of the real server with SQLite.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { SourceView } from '../src/sources/manager.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { listen, SocketTracker, stop } from './fixtures/server.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { json, makeApp, type TestApp } from './helpers/app.ts';
import { closedPort as refusingPort } from './helpers/real-proxies.ts';
import { startServer } from './helpers/server.ts';

interface Item {
  id: string;
  url: string;
  tags: string[];
  country: string | null;
  has_credentials: boolean;
}

/** The list server: fixed bodies by path, plus the misbehaving paths. */
class ListServer {
  readonly bodies = new Map<string, string>();
  counter = 0;
  /** Responses of /endless still being written, and whether each was cut by the client. */
  endless = { started: 0, closed: 0 };
  private server = http.createServer((req, res) => this.handle(req, res));
  private tracker = new SocketTracker(this.server);
  port = 0;

  async start(): Promise<void> {
    this.port = await listen(this.server);
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  close(): Promise<void> {
    return stop(this.server, this.tracker);
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const path = req.url ?? '/';
    const body = this.bodies.get(path);
    if (body !== undefined) return void res.writeHead(200, { 'content-type': 'text/plain' }).end(body);
    if (path === '/counter') {
      this.counter++;
      return void res.end(`10.77.0.${this.counter}:8080\n`);
    }
    if (path === '/hang') return; // never answers
    if (path === '/redirect') return void res.writeHead(302, { location: 'http://10.0.0.1/list' }).end();
    if (path === '/endless') this.endlessAnswer(res);
    else res.writeHead(404).end();
  }

  private endlessAnswer(res: http.ServerResponse): void {
    this.endless.started++;
    res.on('close', () => this.endless.closed++);
    res.writeHead(200, { 'content-type': 'text/plain' });
    const line = Buffer.from('10.66.0.1:8080\n'.repeat(1000));
    const pump = () => {
      while (!res.destroyed && res.write(line));
      if (!res.destroyed) res.once('drain', pump);
    };
    pump();
  }
}

const lists = new ListServer();
let target: TargetServer;
let good: ForwardProxy[];
let closedPort: number;
const dir = mkdtempSync(join(tmpdir(), 'rota-sources-'));

const BASE_ENV = {
  ROTA_SSRF_ALLOW: '127.0.0.0/8',
  ROTA_TIMEOUT: '2',
  ROTA_CONNECT_TIMEOUT_S: '1',
  ROTA_MAX_IMPORT_BYTES: '65536',
};

before(async () => {
  [target, good] = await Promise.all([
    startTarget(),
    Promise.all([startForwardProxy(), startForwardProxy()]),
  ]);
  await lists.start();
  closedPort = await refusingPort();
});

after(async () => {
  await Promise.all([lists.close(), target.close(), ...good.map((g) => g.close())]);
  rmSync(dir, { recursive: true, force: true });
});

async function putSources(t: TestApp, body: unknown) {
  const res = await t.app.inject({ method: 'PUT', url: '/api/v1/sources', ...json(body) });
  return { status: res.statusCode, body: JSON.parse(res.body) };
}

async function getSources(t: TestApp): Promise<SourceView[]> {
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/sources' });
  assert.equal(res.statusCode, 200);
  return JSON.parse(res.body).data as SourceView[];
}

async function items(t: TestApp): Promise<Item[]> {
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/proxies?page_size=100' });
  return JSON.parse(res.body).data.items as Item[];
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, ms = 8000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Resolves once every named source has finished a fetch. */
function fetched(t: TestApp, names: string[]): Promise<SourceView[]> {
  return waitFor(`fetches of ${names.join(', ')}`, async () => {
    const all = await getSources(t);
    return names.every((n) => all.find((s) => s.name === n)?.last_fetch_at) ? all : undefined;
  });
}

describe('proxy sources', () => {
  let t: TestApp;
  before(async () => {
    t = await makeApp({ ...BASE_ENV, ROTA_HEALTH_CHECK_URL: target.url('/json').href });
  });
  after(() => t.close());

  test('text, CSV and JSON lists are fetched, parsed and tagged; a refetch adds nothing twice', async () => {
    lists.bodies.set(
      '/list.txt',
      '# my list\n10.1.0.1:3128\nsocks5://10.1.0.2:1080\n10.1.0.3:8080:alice:S3cret-pw\nnot a proxy\n',
    );
    lists.bodies.set(
      '/list.csv',
      'IP;Port;Type;Country;Username;Password\n10.2.0.1;3128;HTTP;de;;\n"10.2.0.2";1080;socks5;FR;bob;"pw;with;semis"\n10.2.0.3;x;http;;;\n',
    );
    lists.bodies.set(
      '/list.json',
      JSON.stringify({
        proxies: [
          '10.3.0.1:80',
          { host: '10.3.0.2', port: 8443, protocol: 'https' },
          { url: 'socks4://10.3.0.3:1080' },
          7,
        ],
      }),
    );
    const put = await putSources(t, [
      { name: 'txt', url: lists.url('/list.txt'), validate: false },
      { name: 'csv', url: lists.url('/list.csv'), format: 'csv', validate: false, protocol: 'http' },
      { name: 'json', url: lists.url('/list.json'), format: 'json', validate: false, refresh_s: 600 },
    ]);
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual(
      put.body.data.map((s: SourceView) => [s.name, s.format, s.protocol, s.refresh_s, s.validate]),
      [
        ['txt', 'text', 'http', 3600, false],
        ['csv', 'csv', 'http', 3600, false],
        ['json', 'json', 'http', 600, false],
      ],
    );
    const views = await fetched(t, ['txt', 'csv', 'json']);
    const by = (n: string) => views.find((s) => s.name === n)!;
    assert.deepEqual(
      [by('txt').last_count, by('txt').last_added, by('txt').last_invalid, by('txt').last_error],
      [3, 3, 1, null],
    );
    assert.deepEqual([by('csv').last_count, by('csv').last_added, by('csv').last_invalid], [2, 2, 1]);
    assert.deepEqual([by('json').last_count, by('json').last_added, by('json').last_invalid], [3, 3, 1]);
    const pool = await items(t);
    const urls = (tag: string) => pool.filter((i) => i.tags.includes(tag)).map((i) => i.url);
    assert.deepEqual(urls('source:txt'), [
      'http://10.1.0.1:3128',
      'socks5://10.1.0.2:1080',
      'http://10.1.0.3:8080',
    ]);
    assert.deepEqual(urls('source:csv'), ['http://10.2.0.1:3128', 'socks5://10.2.0.2:1080']);
    assert.deepEqual(urls('source:json'), [
      'http://10.3.0.1:80',
      'https://10.3.0.2:8443',
      'socks4://10.3.0.3:1080',
    ]);
    assert.equal(pool.find((i) => i.url === 'http://10.2.0.1:3128')?.country, 'DE');
    assert.equal(pool.find((i) => i.url === 'socks5://10.2.0.2:1080')?.has_credentials, true);
    assert.equal(pool.find((i) => i.url === 'http://10.1.0.3:8080')?.has_credentials, true);

    // PUT again: every source is fetched anew, and what is already in the pool is not added again.
    const again = await putSources(
      t,
      put.body.data.map((s: SourceView) => ({ name: s.name, url: s.url, format: s.format, validate: false })),
    );
    assert.equal(again.status, 200);
    const second = await fetched(t, ['txt', 'csv', 'json']);
    assert.deepEqual(
      second.map((s) => s.last_added),
      [0, 0, 0],
    );
    assert.equal((await items(t)).length, pool.length);
    const text = JSON.stringify(second) + t.logs.join('\n');
    assert.ok(
      !text.includes('S3cret-pw') && !text.includes('with;semis'),
      'no password in an answer or a log',
    );
  });

  test('garbage, a hang, an endless answer and a redirect inwards are bounded, reported, and lose nothing', async () => {
    const before = (await items(t)).map((i) => i.id);
    assert.ok(before.length > 0);
    lists.bodies.set('/garbage', '<html><body>\u0000\u0001 nothing here {]</body></html>\n');
    const started = Date.now();
    const put = await putSources(t, [
      { name: 'garbage', url: lists.url('/garbage'), validate: false },
      { name: 'garbage-json', url: lists.url('/garbage'), format: 'json', validate: false },
      { name: 'hang', url: lists.url('/hang'), validate: false },
      { name: 'endless', url: lists.url('/endless'), validate: false },
      { name: 'redirect', url: lists.url('/redirect'), validate: false },
      { name: 'missing', url: lists.url('/nope'), validate: false },
    ]);
    assert.equal(put.status, 200);
    const views = await fetched(t, ['garbage', 'garbage-json', 'hang', 'endless', 'redirect', 'missing']);
    assert.ok(Date.now() - started < 6000, 'every fetch ended within its deadline');
    const error = (n: string) => views.find((s) => s.name === n)?.last_error ?? '';
    assert.match(error('garbage'), /no proxy in the answer \(1 invalid/);
    assert.match(error('garbage-json'), /not valid JSON/);
    assert.match(error('hang'), /no complete answer within 2 s/);
    assert.match(error('endless'), /larger than 65536 bytes/);
    assert.match(error('redirect'), /redirect \(HTTP 302\) not followed/);
    assert.match(error('missing'), /HTTP 404/);
    await waitFor('the endless answer cut', async () => lists.endless.closed === lists.endless.started);
    assert.deepEqual(
      (await items(t)).map((i) => i.id),
      before,
      'nothing added, nothing lost',
    );
    assert.ok(!(await items(t)).some((i) => i.url.includes('10.66.0.1')));
  });

  test('validate: only the proxies that pass a health check join the pool', async () => {
    lists.bodies.set(
      '/mixed',
      [`127.0.0.1:${good[0]!.port}`, `http://127.0.0.1:${good[1]!.port}`, `127.0.0.1:${closedPort}`].join(
        '\n',
      ),
    );
    const put = await putSources(t, [{ name: 'mixed', url: lists.url('/mixed') }]);
    assert.equal(put.status, 200);
    assert.equal(put.body.data[0].validate, true, 'validate is the default');
    const [view] = await fetched(t, ['mixed']);
    assert.deepEqual(
      [view!.last_count, view!.last_added, view!.last_rejected, view!.last_error],
      [3, 2, 1, null],
    );
    const mine = (await items(t)).filter((i) => i.tags.includes('source:mixed')).map((i) => i.url);
    assert.deepEqual(mine, [`http://127.0.0.1:${good[0]!.port}`, `http://127.0.0.1:${good[1]!.port}`]);
    assert.ok(
      good.every((g) => g.requests.some((r) => r.target.startsWith(target.origin))),
      'each was checked',
    );
  });

  test('refresh_s fetches again on its timer', async () => {
    const first = lists.counter;
    await putSources(t, [{ name: 'ticker', url: lists.url('/counter'), refresh_s: 1, validate: false }]);
    await waitFor(
      'three fetches, each adding its new proxy',
      async () => (await items(t)).filter((i) => i.tags.includes('source:ticker')).length >= 3,
      6000,
    );
    assert.ok(lists.counter >= first + 3);
    await putSources(t, []);
    const stopped = lists.counter;
    await new Promise((r) => setTimeout(r, 1300));
    assert.equal(lists.counter, stopped, 'a removed source is no longer fetched');
    assert.deepEqual(await getSources(t), []);
  });

  test('PUT reports every problem at once and then changes nothing', async () => {
    await putSources(t, [{ name: 'keep', url: lists.url('/counter'), refresh_s: 3600, validate: false }]);
    const res = await putSources(t, [
      { name: 'a', url: 'ftp://example.com/list', format: 'xml' },
      { name: 'A', url: 'http://10.0.0.1/list', refresh_s: 0 },
      { name: 'bad name!', url: 'http://user:pw@example.com/', extra: true },
    ]);
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, 'INVALID_CONFIGURATION');
    const locs = res.body.detail.map((d: { loc: unknown[] }) => d.loc.join('.'));
    for (const loc of [
      'body.0.format',
      'body.0.url',
      'body.1.name',
      'body.1.url',
      'body.1.refresh_s',
      'body.2.name',
      'body.2.url',
    ]) {
      assert.ok(locs.includes(loc), `${loc} in ${locs.join(', ')}`);
    }
    assert.ok(!JSON.stringify(res.body).includes('user:pw'), 'no credential echoed');
    assert.deepEqual(
      (await getSources(t)).map((s) => s.name),
      ['keep'],
    );
    const notArray = await putSources(t, { name: 'x' });
    assert.equal(notArray.status, 400);
  });
});

describe('proxy sources with SQLite storage (real server process)', () => {
  test('PUT sources survives a restart, and the list is fetched again at start', async () => {
    lists.bodies.set('/persist.txt', '10.88.0.1:3128\n10.88.0.2:3128\n');
    const env = { ...BASE_ENV, ROTA_STORAGE_PATH: join(dir, 'rota.db') };
    const body = [
      { name: 'kept', url: lists.url('/persist.txt'), refresh_s: 120, validate: false, protocol: 'socks5' },
    ];
    let s = await startServer(env);
    try {
      const put = await fetch(`${s.url}/api/v1/sources`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      assert.equal(put.status, 200);
      await s.stop();
      lists.bodies.set('/persist.txt', '10.88.0.1:3128\n10.88.0.2:3128\n10.88.0.3:3128\n');
      s = await startServer(env);
      const view = await waitFor('the fetch at start', async () => {
        const res = (await (await fetch(`${s.url}/api/v1/sources`)).json()) as { data: SourceView[] };
        return res.data[0]?.last_fetch_at ? res.data : undefined;
      });
      assert.deepEqual(
        view.map(({ name, url, format, protocol, refresh_s, validate }) => ({
          name,
          url,
          format,
          protocol,
          refresh_s,
          validate,
        })),
        [{ ...body[0], format: 'text' }],
      );
      const listed = (await (await fetch(`${s.url}/api/v1/proxies`)).json()) as { data: { items: Item[] } };
      assert.deepEqual(
        listed.data.items.map((i) => i.url),
        ['socks5://10.88.0.1:3128', 'socks5://10.88.0.2:3128', 'socks5://10.88.0.3:3128'],
      );
    } finally {
      await s.stop();
    }
  });
});
