/**
 * A source's headers and URL query as secrets, end to end: a loopback list server records what each fetch
 * sends. The header reaches it, and so does the real query; neither the header's value nor the query's
 * value shows in `GET`/`PUT sources` answers or in any log line (production logger options, debug level,
 * audit included); the SQLite files hold the value only encrypted; `***` put back keeps it, across a
 * restart too; and invalid headers are refused without echoing a value.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { SourceView } from '../src/sources/manager.ts';
import { listen, SocketTracker, stop } from './fixtures/server.ts';
import { json, type TestApp } from './helpers/app.ts';
import { makeLoggedApp } from './helpers/logged-app.ts';

const TOKEN_HEADER = 'Bearer s3cr3t-hdr-51c7';
const EXTRA_VALUE = 'xv-9f8e-ab01';
const QUERY_TOKEN = 'abc-qtok-77d2';
const SECRETS = [TOKEN_HEADER, 's3cr3t-hdr-51c7', EXTRA_VALUE, QUERY_TOKEN];

interface Seen {
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
}

const seen: Seen[] = [];
const server = http.createServer((req, res) => {
  seen.push({ url: req.url ?? '', headers: req.headers });
  res.writeHead(200, { 'content-type': 'text/plain' }).end('127.0.0.1:9\n');
});
const tracker = new SocketTracker(server);
let port = 0;
const dir = mkdtempSync(join(tmpdir(), 'rota-source-headers-'));
const env = {
  ROTA_SSRF_ALLOW: '127.0.0.0/8',
  ROTA_TIMEOUT: '2',
  ROTA_CONNECT_TIMEOUT_S: '1',
  ROTA_HEALTH_CHECK_URL: 'http://127.0.0.1:9/generate_204',
  ROTA_STORAGE_PATH: join(dir, 'rota.db'),
};

before(async () => {
  port = await listen(server);
});
after(async () => {
  await stop(server, tracker);
  rmSync(dir, { recursive: true, force: true });
});

function source(headers: Record<string, string>) {
  return {
    name: 'tok',
    url: `http://127.0.0.1:${port}/list?token=${QUERY_TOKEN}&page=1`,
    headers,
    validate: false,
  };
}

async function put(t: TestApp, body: unknown) {
  const res = await t.app.inject({ method: 'PUT', url: '/api/v1/sources', ...json(body) });
  return { status: res.statusCode, text: res.body };
}

async function get(t: TestApp): Promise<{ text: string; list: SourceView[] }> {
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/sources' });
  assert.equal(res.statusCode, 200);
  return { text: res.body, list: JSON.parse(res.body).data as SourceView[] };
}

/** The next request the list server sees from now on. */
async function nextFetch(from: number): Promise<Seen> {
  const until = Date.now() + 8000;
  while (seen.length <= from) {
    if (Date.now() > until) throw new Error('the source was not fetched');
    await new Promise((r) => setTimeout(r, 25));
  }
  return seen[from]!;
}

function assertClean(text: string, where: string): void {
  for (const s of SECRETS) assert.ok(!text.includes(s), `${where} shows ${s}: ${text.slice(0, 2000)}`);
}

/** Every file of the database (main, WAL, shared memory) as raw bytes. */
function rawDatabase(): string {
  return readdirSync(dir)
    .filter((f) => f.startsWith('rota.db') && !f.endsWith('.key'))
    .map((f) => readFileSync(join(dir, f)).toString('latin1'))
    .join('\n');
}

describe('source headers and URL query values are secrets', () => {
  let t: TestApp;
  before(async () => {
    t = await makeLoggedApp(env);
  });
  after(() => t.close());

  test('sent to the list server, answered masked, logged nowhere, stored encrypted', async () => {
    const from = seen.length;
    const res = await put(t, [source({ Authorization: TOKEN_HEADER, 'X-Extra': EXTRA_VALUE })]);
    assert.equal(res.status, 200, res.text);
    assertClean(res.text, 'the PUT answer');
    const sent = await nextFetch(from);
    assert.equal(sent.headers.authorization, TOKEN_HEADER);
    assert.equal(sent.headers['x-extra'], EXTRA_VALUE);
    assert.equal(sent.url, `/list?token=${QUERY_TOKEN}&page=1`, 'the real URL is fetched');

    const { text, list } = await get(t);
    assertClean(text, 'GET sources');
    assert.deepEqual(list[0]?.headers, { Authorization: '***', 'X-Extra': '***' });
    assert.equal(list[0]?.url, `http://127.0.0.1:${port}/list?token=***&page=***`);

    const raw = rawDatabase();
    assert.ok(raw.includes('X-Extra'), 'the header names are stored as they are');
    for (const s of [TOKEN_HEADER, 's3cr3t-hdr-51c7', EXTRA_VALUE]) {
      assert.ok(!raw.includes(s), `the SQLite files hold ${s} in clear`);
    }
    assert.ok(t.logs.some((l) => l.includes('"audit":true') && l.includes('sources.update')));
    assertClean(t.logs.join('\n'), 'a log line');
  });

  test('`***` put back keeps the stored value; a new value replaces it', async () => {
    const { list } = await get(t);
    const back = list.map(({ name, url, format, protocol, refresh_s, validate, headers }) => ({
      name,
      url: url.replace('token=***', `token=${QUERY_TOKEN}`).replace('page=***', 'page=1'),
      format,
      protocol,
      refresh_s,
      validate,
      headers,
    }));
    let from = seen.length;
    assert.equal((await put(t, back)).status, 200);
    let sent = await nextFetch(from);
    assert.equal(sent.headers.authorization, TOKEN_HEADER);
    assert.equal(sent.headers['x-extra'], EXTRA_VALUE);

    from = seen.length;
    assert.equal((await put(t, [source({ authorization: '***', Accept: 'text/plain' })])).status, 200);
    sent = await nextFetch(from);
    assert.equal(sent.headers.authorization, TOKEN_HEADER, 'kept under a name in another case');
    assert.equal(sent.headers.accept, 'text/plain', "the source's Accept replaces the default");
    assert.equal(sent.headers['x-extra'], undefined, 'a header left out is dropped');
    assertClean(t.logs.join('\n'), 'a log line');
  });

  test('invalid headers are refused, every one reported, no value echoed', async () => {
    const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`X-H${i}`, EXTRA_VALUE]));
    const cases: unknown[] = [
      [source({ 'Bad Name': EXTRA_VALUE })],
      [source({ 'X-Split': `${EXTRA_VALUE}\r\nX-Injected: 1` })],
      [source({ Host: EXTRA_VALUE })],
      [source({ 'Transfer-Encoding': 'chunked' })],
      [source({ 'X-A': EXTRA_VALUE, 'x-a': EXTRA_VALUE })],
      [source(many)],
      [source({ 'X-Long': `${EXTRA_VALUE}${'v'.repeat(5000)}` })],
      [{ ...source({ 'X-New': '***' }), name: 'fresh' }],
      [source({ 'X-Number': 7 as unknown as string })],
    ];
    for (const body of cases) {
      const res = await put(t, body);
      assert.equal(res.status, 400, res.text);
      assert.equal(JSON.parse(res.text).error.code, 'INVALID_CONFIGURATION');
      assertClean(res.text, 'a refusal');
    }
    assertClean(t.logs.join('\n'), 'a log line');
  });
});

test('the stored header opens after a restart on the same database', async () => {
  const t = await makeLoggedApp(env);
  try {
    const from = seen.length;
    t.services.sources.start();
    const sent = await nextFetch(from);
    assert.equal(sent.headers.authorization, TOKEN_HEADER);
    const { text } = await get(t);
    assertClean(text, 'GET sources after a restart');
  } finally {
    await t.close();
  }
});
