import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GENEROUS_LIMITS } from './helpers/app.ts';
import { API_KEY, AUTH_ENV, assertNoSecret, PROXY_PASS, PROXY_USER, SECRETS } from './helpers/security.ts';
import { type RunningServer, startServer } from './helpers/server.ts';

const REQUESTS = 3000;
const CONCURRENCY = 16;
const KEY = { 'x-api-key': API_KEY };
const JSON_KEY = { ...KEY, 'content-type': 'application/json' };

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1]) / 1024;
}

interface Case {
  name: string;
  ok: readonly number[];
  run(base: string, port: number): Promise<number>;
}

async function send(url: string, init: RequestInit = {}): Promise<number> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(10_000) });
  await res.arrayBuffer();
  return res.status;
}

/** A raw exchange; resolves with the status of the answer, 0 when the server just closed. */
async function raw(port: number, bytes: string, holdMs = 0): Promise<number> {
  const s = net.connect(port, '127.0.0.1');
  await once(s, 'connect');
  s.write(bytes);
  if (holdMs > 0) {
    // A slow client: a partial request, then silence; we give up first.
    await new Promise((r) => setTimeout(r, holdMs));
    s.destroy();
    return 0;
  }
  s.end();
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(c as Buffer);
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(Buffer.concat(chunks).toString('latin1'))?.[1] ?? 0);
}

const post = (body: string, headers: Record<string, string> = JSON_KEY): RequestInit => ({
  method: 'POST',
  headers,
  body,
});

const CASES: Case[] = [
  { name: 'list', ok: [200], run: (b) => send(`${b}/api/v1/proxies?page_size=5`, { headers: KEY }) },
  { name: 'stats', ok: [200], run: (b) => send(`${b}/api/v1/stats`, { headers: KEY }) },
  { name: 'export', ok: [200], run: (b) => send(`${b}/api/v1/proxies/export`, { headers: KEY }) },
  { name: 'metrics', ok: [200], run: (b) => send(`${b}/metrics`, { headers: KEY }) },
  {
    name: 'wrong key',
    ok: [401],
    run: (b) => send(`${b}/api/v1/config`, { headers: { 'x-api-key': randomUUID() } }),
  },
  {
    name: 'no key',
    ok: [401],
    run: (b) => send(`${b}/api/v1/proxies`, post('{}', { 'content-type': 'application/json' })),
  },
  {
    name: 'oversized',
    ok: [413],
    run: (b) => send(`${b}/api/v1/proxies`, post(JSON.stringify({ url: 'x'.repeat(100_000) }))),
  },
  {
    name: 'malformed JSON',
    ok: [422],
    run: (b) => send(`${b}/api/v1/proxies`, post('{"url": "http://a:1",')),
  },
  {
    name: 'bad proxy URL',
    ok: [400],
    run: (b) =>
      send(`${b}/api/v1/proxies`, post(JSON.stringify({ url: `${PROXY_USER}:${PROXY_PASS}@h:1/x` }))),
  },
  {
    name: 'duplicate',
    ok: [409],
    run: (b) =>
      send(
        `${b}/api/v1/proxies`,
        post(JSON.stringify({ url: `http://${PROXY_USER}:${PROXY_PASS}@127.0.0.1:9` })),
      ),
  },
  {
    name: 'random path',
    ok: [404],
    run: (b) => send(`${b}/${randomUUID()}/${randomUUID()}`, { headers: KEY }),
  },
  {
    name: 'delete unknown',
    ok: [404],
    run: (b) => send(`${b}/api/v1/proxies/${randomUUID()}`, { method: 'DELETE', headers: KEY }),
  },
  {
    name: 'bad config',
    ok: [400],
    run: (b) => send(`${b}/api/v1/config`, { ...post('{"timeout": 0}'), method: 'PUT' }),
  },
  {
    name: 'too many ids',
    ok: [422],
    run: (b) =>
      send(`${b}/api/v1/proxies/health-check`, post(JSON.stringify({ proxy_ids: Array(1001).fill('x') }))),
  },
  { name: 'bad hours', ok: [422], run: (b) => send(`${b}/metrics/retry?hours=1e9`, { headers: KEY }) },
  {
    name: 'bad target',
    ok: [400, 422],
    run: (b) => send(`${b}/api/v1/request`, post('{"url":"file:///etc/passwd"}')),
  },
  { name: 'garbage', ok: [400], run: (_b, p) => raw(p, 'NOT HTTP AT ALL\r\n\r\n') },
  {
    name: 'huge header',
    ok: [431],
    run: (_b, p) => raw(p, `GET / HTTP/1.1\r\nHost: x\r\nX-A: ${'a'.repeat(20_000)}\r\n\r\n`),
  },
  {
    name: 'slow client',
    ok: [0],
    run: (_b, p) => raw(p, 'POST /api/v1/proxies HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n', 50),
  },
];

describe('soak: mixed good, bad and hostile traffic against the real process', () => {
  let server: RunningServer;
  let dir: string;
  let baseline: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rota-soak-'));
    server = await startServer({
      ...GENEROUS_LIMITS,
      ...AUTH_ENV,
      ROTA_MAX_BODY_BYTES: '65536',
      ROTA_STORAGE_PATH: join(dir, 'rota.db'),
    });
    for (const port of [9, 10, 11]) {
      const body = JSON.stringify({ url: `http://${PROXY_USER}:${PROXY_PASS}@127.0.0.1:${port}` });
      assert.equal(await send(`${server.url}/api/v1/proxies`, post(body)), 201);
    }
    baseline = await (await fetch(`${server.url}/api/v1/proxies/export`, { headers: KEY })).text();
  });
  after(async () => {
    await server.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  async function drive(n: number, seen: Map<string, number>): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < n) {
        const c = CASES[next++ % CASES.length]!;
        const status = await c.run(server.url, server.port);
        assert.ok(c.ok.includes(status), `${c.name}: ${status}`);
        seen.set(c.name, (seen.get(c.name) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  }

  it(`${REQUESTS} requests later: up, memory back near its start, pool unchanged, no secret out`, async () => {
    const pid = server.proc.pid!;
    // Warm up first: JIT, pools and caches grow to their working size, and that is not a leak.
    await drive(CASES.length * 30, new Map());
    const start = rssMb(pid);
    const seen = new Map<string, number>();
    await drive(REQUESTS, seen);
    assert.equal(seen.size, CASES.length, 'every kind of request was sent');
    await new Promise((r) => setTimeout(r, 1000));
    const end = rssMb(pid);
    assert.ok(end - start < 50, `RSS ${start.toFixed(1)} MB → ${end.toFixed(1)} MB`);
    assert.equal(server.proc.exitCode, null, 'still running');
    assert.equal(await send(`${server.url}/api/v1/ready`), 200);
    const exported = await (await fetch(`${server.url}/api/v1/proxies/export`, { headers: KEY })).text();
    assert.equal(exported, baseline);
    assertNoSecret(exported, 'export');
    assertNoSecret(server.output(), 'process output');
    assert.equal((await server.stop('SIGTERM')).code, 0, 'a clean shutdown');
    for (const f of readdirSync(dir))
      assertNoSecret(readFileSync(join(dir, f)).toString('latin1'), f, SECRETS);
  });
});
