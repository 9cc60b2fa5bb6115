/**
 * Bulk import (`POST /api/v1/proxies/import`) through the real app: every line form, NDJSON, duplicates,
 * invalid lines and their numbers, the caps (413 storing nothing), the rate limit, credentials kept out of
 * every answer and log line, and, with SQLite in a real server process, everything kept across a restart.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, beforeEach, describe, test } from 'node:test';
import { json, makeApp, type TestApp } from './helpers/app.ts';
import { startServer } from './helpers/server.ts';

interface Summary {
  created: number;
  duplicates: number;
  invalid: { line: number; reason: string }[];
  invalid_count: number;
}

interface Item {
  id: string;
  url: string;
  weight: number;
  country: string | null;
  tags: string[];
  has_credentials: boolean;
}

const SECRETS = ['Tx7-pass', 'Nd-secret-9', 'Bad-line-pw', 'pw:with:colons', 'Url-pw-42'];

const dir = mkdtempSync(join(tmpdir(), 'rota-import-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function post(t: TestApp, body: string | Buffer, type = 'text/plain', query = '') {
  const res = await t.app.inject({
    method: 'POST',
    url: `/api/v1/proxies/import${query}`,
    headers: { 'content-type': type },
    payload: body,
  });
  return { status: res.statusCode, text: res.body, body: JSON.parse(res.body) };
}

async function items(t: TestApp): Promise<Item[]> {
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/proxies?page_size=100' });
  return JSON.parse(res.body).data.items as Item[];
}

describe('POST proxies/import', () => {
  let t: TestApp;
  const answers: string[] = [];
  beforeEach(async () => {
    t = await makeApp();
  });
  afterEach(async () => {
    const logs = t.logs.join('\n');
    await t.close();
    for (const s of SECRETS) {
      assert.ok(!logs.includes(s), `no credential in a log line (${s})`);
      assert.ok(!answers.join('\n').includes(s), `no credential in an answer (${s})`);
    }
  });
  const postAll = async (...args: Parameters<typeof post>) => {
    const r = await post(...args);
    answers.push(r.text);
    return r;
  };

  test('every text line form, with comments, blank lines and the protocol of bare lines', async () => {
    const lines = [
      '# a comment',
      '',
      'http://203.0.113.1:3128',
      'socks5h://alice:Tx7-pass@203.0.113.2:1080',
      '203.0.113.3:8080',
      '   203.0.113.4:8081   ',
      '203.0.113.5:8082:bob:pw:with:colons',
      'carol:Url-pw-42@203.0.113.6:8083',
      '[2001:db8::7]:3128',
      '\t# an indented comment',
      'proxy.example.com:9000\r',
    ];
    const r = await postAll(t, `${lines.join('\n')}\n`, 'text/plain; charset=utf-8', '?protocol=socks5');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.status, 'success');
    assert.deepEqual(r.body.data, {
      created: 8,
      duplicates: 0,
      invalid: [],
      invalid_count: 0,
    } satisfies Summary);
    const got = await items(t);
    assert.deepEqual(
      got.map((i) => [i.url, i.has_credentials]),
      [
        ['http://203.0.113.1:3128', false],
        ['socks5h://203.0.113.2:1080', true],
        ['socks5://203.0.113.3:8080', false],
        ['socks5://203.0.113.4:8081', false],
        ['socks5://203.0.113.5:8082', true],
        ['socks5://203.0.113.6:8083', true],
        ['socks5://[2001:db8::7]:3128', false],
        ['socks5://proxy.example.com:9000', false],
      ],
    );
    // The credentials really are the ones given (colons after the third one belong to the password).
    const stored = t.services.pool.all().map((e) => [e.record.username, e.record.password]);
    assert.deepEqual(stored[4], ['bob', 'pw:with:colons']);
    assert.deepEqual(stored[5], ['carol', 'Url-pw-42']);
    const defaults = await postAll(t, '203.0.113.9:1\n');
    assert.equal(defaults.body.data.created, 1);
    assert.equal((await items(t)).at(-1)?.url, 'http://203.0.113.9:1', 'bare lines are http by default');
  });

  test('NDJSON lines are POST proxies bodies, validated the same way', async () => {
    const body = [
      JSON.stringify({ url: 'http://198.51.100.1:3128', weight: 2.5, country: 'de', tags: ['a', 'b'] }),
      JSON.stringify({ url: 'socks5://198.51.100.2:1080', username: 'dan', password: 'Nd-secret-9' }),
      '',
      JSON.stringify({ url: 'http://198.51.100.3:3128', weight: 0 }),
      '{"url": "http://198.51.100.4:3128", "password": "Nd-secret-9"',
      JSON.stringify(['http://198.51.100.5:3128']),
      JSON.stringify({ url: 'http://198.51.100.6:3128', color: 'red' }),
      JSON.stringify({ url: 'http://eve:Nd-secret-9@198.51.100.7:3128', password: 'Nd-secret-9' }),
      JSON.stringify({ url: 'ftp://198.51.100.8:21' }),
      JSON.stringify({ url: 'http://198.51.100.9:3128', country: 'Germany' }),
    ].join('\n');
    const r = await postAll(t, body, 'application/x-ndjson');
    assert.equal(r.status, 200, r.text);
    const data = r.body.data as Summary;
    assert.equal(data.created, 2);
    assert.deepEqual(
      data.invalid.map((i) => i.line),
      [4, 5, 6, 7, 8, 9, 10],
    );
    assert.match(data.invalid[0]!.reason, /weight/);
    assert.equal(data.invalid[1]!.reason, 'not valid JSON');
    assert.equal(data.invalid[2]!.reason, 'expected a JSON object');
    assert.match(data.invalid[3]!.reason, /additional properties \(color\)/);
    assert.match(data.invalid[4]!.reason, /credentials given both/);
    assert.match(data.invalid[5]!.reason, /unsupported scheme/);
    assert.match(data.invalid[6]!.reason, /country/);
    const [first, second] = await items(t);
    assert.deepEqual([first!.weight, first!.country, first!.tags], [2.5, 'DE', ['a', 'b']]);
    assert.equal(second!.has_credentials, true);
  });

  test('repeats within the file and of proxies already in the pool are duplicates', async () => {
    const add = await t.app.inject({
      method: 'POST',
      url: '/api/v1/proxies',
      ...json({ url: 'http://192.0.2.1:80' }),
    });
    assert.equal(add.statusCode, 201);
    const body = [
      'http://192.0.2.1:80', // in the pool
      '192.0.2.2:80',
      'HTTP://192.0.2.2:80/', // the same after normalisation
      '192.0.2.3:80:u1:p1',
      '192.0.2.3:80:u2:p2', // another username: another proxy
      '192.0.2.3:80:u1:other', // same URL and username: the same proxy
    ].join('\n');
    const r = await postAll(t, body);
    assert.deepEqual(r.body.data, { created: 3, duplicates: 3, invalid: [], invalid_count: 0 });
    const again = await postAll(t, body);
    assert.deepEqual(again.body.data, { created: 0, duplicates: 6, invalid: [], invalid_count: 0 });
    // Two imports of the same list at once: each proxy is created once.
    const list = Array.from({ length: 50 }, (_, i) => `192.0.2.100:${1000 + i}`).join('\n');
    const [a, b] = await Promise.all([postAll(t, list), postAll(t, list)]);
    assert.equal(a.body.data.created + b.body.data.created, 50);
    assert.equal(a.body.data.duplicates + b.body.data.duplicates, 50);
    assert.equal(t.services.pool.size, 54);
  });

  test('invalid lines are numbered counting every line, at most 100 listed, never quoting a password', async () => {
    const lines = [
      '# header',
      '',
      'ok.example:1',
      'not a proxy',
      '192.0.2.9:99999',
      'h:1:only-user',
      'h:1::Bad-line-pw',
    ];
    lines.push('http://x:Bad-line-pw@bad_host:80', 'socks9://192.0.2.1:1', 'http://192.0.2.1:1/path');
    for (let i = 0; i < 150; i++) lines.push(`bad-${i}`);
    const r = await postAll(t, lines.join('\n'));
    assert.equal(r.status, 200);
    const data = r.body.data as Summary;
    assert.equal(data.created, 1);
    assert.equal(data.invalid_count, 157);
    assert.equal(data.invalid.length, 100);
    assert.deepEqual(
      data.invalid.slice(0, 7).map((i) => i.line),
      [4, 5, 6, 7, 8, 9, 10],
    );
    assert.equal(data.invalid[99]!.line, 103);
    for (const i of data.invalid)
      assert.ok(!i.reason.includes('Bad-line-pw') && !i.reason.includes('bad-'), i.reason);
  });

  test('over ROTA_MAX_IMPORT_BYTES or 100,000 lines: 413 in the envelope, nothing stored', async () => {
    await t.close();
    t = await makeApp({ ROTA_MAX_IMPORT_BYTES: '4096' });
    const big = `192.0.2.1:80\n${'# padding padding padding\n'.repeat(200)}`;
    for (const type of ['text/plain', 'application/x-ndjson']) {
      const r = await postAll(t, big, type);
      assert.equal(r.status, 413);
      assert.equal(r.body.error.code, 'PAYLOAD_TOO_LARGE');
      assert.equal(r.body.status, 'error');
    }
    await t.close();
    t = await makeApp();
    const many = `192.0.2.1:80\n${'#\n'.repeat(100_000)}`;
    const r = await postAll(t, many);
    assert.equal(r.status, 413);
    assert.equal(r.body.error.code, 'PAYLOAD_TOO_LARGE');
    assert.equal(r.body.error.details.max_lines, 100_000);
    assert.equal(t.services.pool.size, 0);
    assert.equal(await t.services.store.count(), 0);
    // Exactly 100,000 lines is allowed.
    const edge = await postAll(t, `192.0.2.1:80\n${'#\n'.repeat(99_999)}`);
    assert.equal(edge.status, 200);
    assert.equal(edge.body.data.created, 1);
  });

  test('a JSON array of bodies works too; other media types are 415, bad UTF-8 is 422, empty is nothing', async () => {
    const items = [{ url: 'http://192.0.2.1:80', tags: ['j'] }, { url: 'nope' }, 'http://192.0.2.2:80'];
    const asJson = await t.app.inject({ method: 'POST', url: '/api/v1/proxies/import', ...json(items) });
    assert.equal(asJson.statusCode, 200, asJson.body);
    assert.deepEqual(JSON.parse(asJson.body).data, {
      created: 1,
      duplicates: 0,
      invalid: [
        { line: 2, reason: 'expected scheme://host:port' },
        { line: 3, reason: 'expected a JSON object' },
      ],
      invalid_count: 2,
    });
    const notArray = await t.app.inject({
      method: 'POST',
      url: '/api/v1/proxies/import',
      ...json({ url: 'x' }),
    });
    assert.equal(notArray.statusCode, 422);
    const tooMany = await t.app.inject({
      method: 'POST',
      url: '/api/v1/proxies/import',
      ...json(Array.from({ length: 100_001 }, () => 0)),
    });
    assert.equal(tooMany.statusCode, 413);
    assert.equal(t.services.pool.size, 1);
    const form = await post(t, 'a=b', 'application/x-www-form-urlencoded');
    assert.equal(form.status, 415);
    assert.match(form.body.error.message, /text\/plain, application\/x-ndjson or application\/json/);
    const bad = await post(t, Buffer.from([0x31, 0x3a, 0x32, 0xff, 0x0a]));
    assert.equal(bad.status, 422);
    const empty = await post(t, '');
    assert.deepEqual(empty.body.data, { created: 0, duplicates: 0, invalid: [], invalid_count: 0 });
    const badProtocol = await post(t, '192.0.2.9:80', 'text/plain', '?protocol=ftp');
    assert.equal(badProtocol.status, 422);
    assert.equal(t.services.pool.size, 1);
  });

  test('one unit of the add-proxy rate limit per call, shared with POST proxies; audited', async () => {
    await t.close();
    t = await makeApp({ ROTA_RATE_LIMIT_ADD_PROXY: '3/minute' });
    const list = Array.from({ length: 500 }, (_, i) => `192.0.2.${i % 250}:${1000 + i}`).join('\n');
    assert.equal((await postAll(t, list)).status, 200);
    assert.equal((await postAll(t, '192.0.2.1:1')).status, 200);
    const single = await t.app.inject({
      method: 'POST',
      url: '/api/v1/proxies',
      ...json({ url: 'http://192.0.2.1:2' }),
    });
    assert.equal(single.statusCode, 201);
    const limited = await postAll(t, '192.0.2.1:3');
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error.code, 'RATE_LIMIT_EXCEEDED');
    assert.equal(t.services.pool.size, 502);
    const audits = t.logs.map((l) => JSON.parse(l)).filter((l) => l.audit && l.action === 'proxy.import');
    assert.deepEqual(
      audits.map((a) => [a.status, a.outcome]),
      [
        [200, 'success'],
        [200, 'success'],
        [429, 'rate_limited'],
      ],
    );
    assert.deepEqual(audits[0].body, { format: 'text', bytes: Buffer.byteLength(list), lines: 500 });
  });
});

describe('POST proxies/import with SQLite storage (real server process)', () => {
  test('every imported proxy, credentials included, survives a restart', async () => {
    const env = {
      ROTA_STORAGE_PATH: join(dir, 'rota.db'),
      ROTA_LOG_LEVEL: 'info',
    };
    const text = ['203.0.113.10:3128:user1:Tx7-pass', 'socks5://203.0.113.11:1080', '#', 'junk'].join('\n');
    const ndjson = JSON.stringify({
      url: 'http://203.0.113.12:8080',
      username: 'u',
      password: 'Nd-secret-9',
      country: 'FR',
    });
    let s = await startServer(env);
    const outputs: string[] = [];
    try {
      const send = (body: string, type: string) =>
        fetch(`${s.url}/api/v1/proxies/import`, { method: 'POST', headers: { 'content-type': type }, body });
      const a = await send(text, 'text/plain');
      assert.equal(a.status, 200);
      assert.deepEqual(((await a.json()) as { data: Summary }).data.invalid, [
        { line: 4, reason: 'expected scheme://host:port, host:port or host:port:user:pass' },
      ]);
      const b = await send(ndjson, 'application/x-ndjson');
      assert.equal(((await b.json()) as { data: Summary }).data.created, 1);
      // Over 100,000 lines (the byte cap over a real socket, with the client still sending when the 413
      // comes: body-limit.test.ts).
      const tooBig = await send(`203.0.113.13:1:u:Tx7-pass\n${'#\n'.repeat(100_000)}`, 'text/plain');
      assert.equal(tooBig.status, 413);
      assert.equal(((await tooBig.json()) as { error: { code: string } }).error.code, 'PAYLOAD_TOO_LARGE');
      const before = (await (await fetch(`${s.url}/api/v1/proxies`)).json()) as { data: { items: Item[] } };
      assert.equal((await s.stop()).code, 0);
      outputs.push(s.output());
      s = await startServer(env);
      const afterRestart = (await (await fetch(`${s.url}/api/v1/proxies`)).json()) as {
        data: { items: Item[] };
      };
      assert.deepEqual(afterRestart.data.items, before.data.items);
      assert.deepEqual(
        afterRestart.data.items.map((i) => [i.url, i.has_credentials, i.country]),
        [
          ['http://203.0.113.10:3128', true, null],
          ['socks5://203.0.113.11:1080', false, null],
          ['http://203.0.113.12:8080', true, 'FR'],
        ],
      );
      await s.stop();
      outputs.push(s.output());
      assert.match(outputs[0]!, /proxy\.import/, 'the imports were audited');
      for (const secret of SECRETS) {
        assert.ok(!outputs.join('').includes(secret), `no credential in the server's output (${secret})`);
      }
    } finally {
      await s.stop();
    }
  });
});
