import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { type TlsMaterial, testTls } from './fixtures/certs.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { listen, SocketTracker, stop } from './fixtures/server.ts';
import { startTarget } from './fixtures/target.ts';
import {
  addUpstream,
  connectVia,
  getOverTunnel,
  type ListeningApp,
  listeningApp,
} from './helpers/forward.ts';
import { curl } from './helpers/forward-clients.ts';

/*
 * HTTPS inspection through the HTTP listener with real clients: Rota answers CONNECT at once, speaks
 * TLS with a leaf of its own CA, and sends each request inside through the one engine (a pick per
 * request, bans seen and retried, the proxy named in X-Rota-Proxy-Id).
 */

interface Site {
  readonly port: number;
  /** Requests seen: the egress address they came from, and whether it was refused. */
  readonly seen: { from: string; path: string; banned: boolean }[];
  banned: Set<string>;
  close(): Promise<void>;
}

/** An HTTPS site on 127.0.0.1 (certificate for localhost and 127.0.0.1) that refuses some egresses with 403. */
async function startSite(tlsMaterial: TlsMaterial, banned: string[] = []): Promise<Site> {
  const state = { banned: new Set(banned), seen: [] as Site['seen'] };
  const server = https.createServer({ key: tlsMaterial.key, cert: tlsMaterial.cert }, (req, res) => {
    const from = req.socket.remoteAddress?.replace(/^::ffff:/, '') ?? '';
    const ban = state.banned.has(from);
    state.seen.push({ from, path: req.url ?? '', banned: ban });
    req.resume();
    const body = ban ? 'Access denied' : JSON.stringify({ from, path: req.url });
    res.writeHead(ban ? 403 : 200, {
      'content-type': 'text/plain',
      'content-length': Buffer.byteLength(body),
    });
    res.end(body);
  });
  const tracker = new SocketTracker(server);
  const port = await listen(server);
  return {
    port,
    seen: state.seen,
    get banned() {
      return state.banned;
    },
    set banned(v: Set<string>) {
      state.banned = v;
    },
    close: () => stop(server, tracker),
  };
}

const run = promisify(execFile);

let material: TlsMaterial;
let site: Site;
let proxies: ForwardProxy[];
let t: ListeningApp;
let ids: string[];
let ca: string;

before(async () => {
  material = await testTls();
  site = await startSite(material);
  proxies = await Promise.all([
    startForwardProxy({ egress: '127.0.0.3' }),
    startForwardProxy({ egress: '127.0.0.4' }),
  ]);
  t = await listeningApp({ ROTA_INSPECT_HOSTS: '127.0.0.1' }, { upstreamTls: { ca: material.ca } });
  ids = [];
  for (const p of proxies) ids.push(await addUpstream(t, { url: `http://127.0.0.1:${p.port}` }));
  ca = await t.services.inspection.authority.caPem();
});

after(async () => {
  await t.close();
  await Promise.all([site.close(), ...proxies.map((p) => p.close())]);
  setTimeout(() => {
    const handles = (process as unknown as { _getActiveHandles(): object[] })._getActiveHandles();
    console.log(
      'HANDLES',
      handles.map((h) => h.constructor.name),
    );
  }, 3000).unref();
});

/** `curl` over one connection for every URL given; each answer's status and X-Rota-Proxy-Id. */
async function curlMany(paths: string[]): Promise<{ status: number; proxy: string }[]> {
  const dir = await mkdtemp(join(tmpdir(), 'rota-inspect-'));
  try {
    const caFile = join(dir, 'ca.pem');
    await writeFile(caFile, ca);
    const args = ['-sS', '--max-time', '20', '--cacert', caFile, '-x', `http://127.0.0.1:${t.httpPort}`];
    args.push('-w', '%{http_code} %header{x-rota-proxy-id}\\n');
    for (const p of paths) args.push('-o', '/dev/null', `https://127.0.0.1:${site.port}${p}`);
    const { stdout } = await run('curl', args);
    return stdout
      .trim()
      .split('\n')
      .map((l) => {
        const [status = '0', proxy = ''] = l.split(' ');
        return { status: Number(status), proxy };
      });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('inspected HTTPS', () => {
  test('curl: ten requests on one kept-alive connection are ten picks of the strategy', async () => {
    const connectsBefore = proxies.map((p) => p.requests.filter((r) => r.method === 'CONNECT').length);
    const answers = await curlMany(Array.from({ length: 10 }, (_, i) => `/page/${i}`));
    assert.equal(answers.length, 10);
    for (const a of answers) assert.equal(a.status, 200);
    assert.deepEqual(new Set(answers.map((a) => a.proxy)), new Set(ids), 'both proxies took requests');
    // Upstream, each proxy keeps its tunnel to the site alive: far fewer CONNECTs than requests.
    const connects = proxies.map(
      (p, i) => p.requests.filter((r) => r.method === 'CONNECT').length - (connectsBefore[i] ?? 0),
    );
    assert.ok(
      connects.every((n) => n <= 2),
      `CONNECTs per proxy: ${connects}`,
    );
    assert.equal(t.services.listeners.metrics.totals.inspect.succeeded >= 10, true);
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/listeners' });
    const body = res.json() as {
      listeners: { name: string; totals: Record<string, { succeeded: number }> }[];
      inspection: { hosts: string[]; cached_contexts: number; handshakes: { ok: number } };
    };
    assert.deepEqual(body.inspection.hosts, ['127.0.0.1']);
    assert.equal(body.inspection.cached_contexts, 1);
    assert.ok(body.inspection.handshakes.ok >= 1);
    assert.ok((body.listeners[0]?.totals.inspect?.succeeded ?? 0) >= 10);
  });

  test('a ban inside HTTPS is seen, the pair cools down, and the request is retried on the other proxy', async () => {
    site.banned = new Set(['127.0.0.3']);
    try {
      const answers = await curlMany(Array.from({ length: 6 }, (_, i) => `/ban/${i}`));
      for (const a of answers) assert.equal(a.status, 200, 'the client never sees the 403');
      const banned = ids[0] ?? '';
      assert.ok(answers.every((a) => a.proxy !== banned));
      assert.ok(
        site.seen.some((s) => s.banned),
        'the banned proxy was asked, and refused',
      );
      const cooling = t.services.cooldowns.active('127.0.0.1').map((c) => c.proxyId);
      assert.deepEqual(cooling, [banned]);
    } finally {
      site.banned = new Set();
      t.services.cooldowns.clear();
    }
  });

  test('a client that does not trust Rota’s CA ends its connection; it is counted and logged once', async () => {
    const before = t.services.listeners.metrics.handshakes.client_refused;
    for (let i = 0; i < 2; i++) {
      const r = await curl(`https://127.0.0.1:${site.port}/x`, {
        proxy: `http://127.0.0.1:${t.httpPort}`,
        ca: material.ca,
      });
      assert.notEqual(r.code, 0, 'curl refuses the certificate');
    }
    assert.equal(t.services.listeners.metrics.handshakes.client_refused, before + 2);
    const lines = t.logs.filter((l) => l.includes("refused Rota's certificate"));
    assert.equal(lines.length, 1, 'logged once per host');
    assert.match(lines[0] ?? '', /passthrough/);
  });

  test('not TLS after the CONNECT: a plain tunnel through a proxy picked then, bytes passed on', async () => {
    const plain = await startTarget();
    const before = t.services.listeners.metrics.handshakes.not_tls;
    const tun = await connectVia(t.httpPort, `127.0.0.1:${plain.port}`);
    assert.equal(tun.status, 200);
    const text = await getOverTunnel(tun.socket, `127.0.0.1:${plain.port}`, '/echo');
    assert.match(text, /^HTTP\/1\.1 200/);
    assert.equal(t.services.listeners.metrics.handshakes.not_tls, before + 1);
    assert.equal(plain.count('GET', '/echo'), 1);
    await plain.close();
  });
});
