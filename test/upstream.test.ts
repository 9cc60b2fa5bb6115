import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ProxyRecord } from '../src/pool/types.ts';
import { DispatcherCache } from '../src/upstream/dispatchers.ts';
import { type TlsMaterial, testTls } from './fixtures/certs.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import {
  startAuthDemander,
  startBlackhole,
  startConnectRefuser,
  startGarbage,
  startHangUp,
  startResetter,
} from './fixtures/misbehaving.ts';
import { type SocksFixture, startSocksFixture } from './fixtures/socks.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import {
  closedPort,
  type RealProxy,
  startAllOrClose,
  startDante,
  startTinyproxy,
} from './helpers/real-proxies.ts';
import { assertFailure, attempt, errorText, failure, proxyRecord, waitFor } from './helpers/upstream.ts';

const CONNECT_TIMEOUT_MS = 1_000;
const USER = 'alice';
const SECRET = 'pw-Secret-7731';

let tlsMaterial: TlsMaterial;
let http: TargetServer;
let https: TargetServer;
let cache: DispatcherCache;
let fixtureProxy: ForwardProxy;
let tlsProxy: ForwardProxy;
let socksFixture: SocksFixture;
let tinyproxy: RealProxy;
let dante: RealProxy;
let danteAuth: RealProxy;
const closers: (() => Promise<void>)[] = [];

before(async () => {
  tlsMaterial = await testTls();
  const auth = { username: USER, password: SECRET };
  [http, https, fixtureProxy, tlsProxy, socksFixture, tinyproxy, dante, danteAuth] = await startAllOrClose([
    startTarget(),
    startTarget({ tls: tlsMaterial }),
    startForwardProxy({ auth }),
    startForwardProxy({ auth, tls: tlsMaterial }),
    startSocksFixture({ auth }),
    startTinyproxy({ auth }),
    startDante(),
    startDante({ auth: true }),
  ]);
  for (const f of [http, https, fixtureProxy, tlsProxy, socksFixture, tinyproxy, dante, danteAuth]) {
    closers.push(() => f.close());
  }
  cache = new DispatcherCache({ connectTimeoutMs: CONNECT_TIMEOUT_MS, tls: { ca: tlsMaterial.ca } });
  closers.unshift(() => cache.closeAll());
});

after(async () => {
  for (const close of closers) await close();
});

/** A fixture started by one test, closed with the others after the file. */
async function use<T extends { close(): Promise<void> }>(p: Promise<T>): Promise<T> {
  const f = await p;
  closers.push(() => f.close());
  return f;
}

/** A plain-http target and an https one, both named `localhost` so that *h schemes send a name. */
function targets(path: string): [URL, URL] {
  return [new URL(`http://localhost:${http.port}${path}`), new URL(`https://localhost:${https.port}${path}`)];
}

describe('through each kind of proxy, with credentials where the proxy takes them', () => {
  const cases: [string, () => ProxyRecord][] = [
    [
      'http (fixture, Basic auth)',
      () => proxyRecord('http', fixtureProxy.port, { username: USER, password: SECRET }),
    ],
    [
      'http (tinyproxy, Basic auth)',
      () => proxyRecord('http', tinyproxy.port, { username: USER, password: SECRET }),
    ],
    [
      'https (TLS fixture, Basic auth)',
      () => proxyRecord('https', tlsProxy.port, { username: USER, password: SECRET }),
    ],
    ['socks5 (dante)', () => proxyRecord('socks5', dante.port)],
    ['socks5h (dante)', () => proxyRecord('socks5h', dante.port)],
    ['socks5 (dante, username auth)', () => proxyRecord('socks5', danteAuth.port, danteAuth)],
    ['socks5h (dante, username auth)', () => proxyRecord('socks5h', danteAuth.port, danteAuth)],
    ['socks4 (dante)', () => proxyRecord('socks4', dante.port)],
    ['socks4a (fixture)', () => proxyRecord('socks4a', socksFixture.port, { username: USER })],
    [
      'socks5h (fixture, username auth)',
      () => proxyRecord('socks5h', socksFixture.port, { username: USER, password: SECRET }),
    ],
  ];
  for (const [name, make] of cases) {
    test(name, async () => {
      const d = cache.get(make());
      const [plain, tls] = targets('/echo?x=1');
      const a = await attempt(d, plain, { headers: { 'x-probe': 'plain' } });
      assert.equal(a.statusCode, 200);
      const echoed = JSON.parse(a.body.toString('utf8'));
      assert.equal(echoed.path, '/echo?x=1');
      assert.equal(echoed.headers['x-probe'], 'plain');
      assert.equal(echoed.headers['proxy-authorization'], undefined);
      const b = await attempt(d, tls, { method: 'POST', body: 'hello' });
      assert.equal(b.statusCode, 200);
      assert.equal(JSON.parse(b.body.toString('utf8')).body, 'hello');
    });
  }

  test('http proxies get the absolute-URI form for http targets and CONNECT for https ones', async () => {
    const proxy = await startForwardProxy();
    try {
      const d = cache.get(proxyRecord('http', proxy.port));
      const [plain, tls] = targets('/json');
      await attempt(d, plain);
      await attempt(d, tls);
      assert.deepEqual(
        proxy.requests.map((r) => [r.method, r.target]),
        [
          ['GET', plain.href],
          ['CONNECT', `localhost:${https.port}`],
        ],
      );
    } finally {
      await proxy.close();
    }
  });

  test('socks4/socks5 resolve the name locally, socks4a/socks5h send it to the proxy', async () => {
    const open = await startSocksFixture();
    try {
      for (const protocol of ['socks4', 'socks4a', 'socks5', 'socks5h'] as const) {
        await attempt(cache.get(proxyRecord(protocol, open.port)), targets('/json')[0]);
      }
      assert.deepEqual(
        open.requests.map((r) => [r.version, r.addressType, r.host]),
        [
          [4, 'ipv4', '127.0.0.1'],
          [4, 'domain', 'localhost'],
          [5, 'ipv4', '127.0.0.1'],
          [5, 'domain', 'localhost'],
        ],
      );
    } finally {
      await open.close();
    }
  });
});

describe('proxy credentials', () => {
  test('go to the proxy only: a caller-supplied Proxy-Authorization is dropped, ours never reaches the target', async () => {
    const d = cache.get(proxyRecord('http', fixtureProxy.port, { username: USER, password: SECRET }));
    const before = fixtureProxy.requests.length;
    for (const url of targets('/echo')) {
      const r = await attempt(d, url, {
        headers: { 'Proxy-Authorization': 'Basic Y2FsbGVyOmxlYWs=', Connection: 'x-drop', 'x-drop': '1' },
      });
      const seen = JSON.parse(r.body.toString('utf8')).headers;
      assert.equal(seen['proxy-authorization'], undefined);
      assert.equal(seen['x-drop'], undefined, 'headers named in Connection are hop-by-hop');
    }
    const ours = `Basic ${Buffer.from(`${USER}:${SECRET}`).toString('base64')}`;
    for (const r of fixtureProxy.requests.slice(before)) assert.equal(r.proxyAuthorization, ours);
  });

  test('through tinyproxy, the target sees no Proxy-Authorization either', async () => {
    const d = cache.get(proxyRecord('http', tinyproxy.port, { username: USER, password: SECRET }));
    const r = await attempt(d, targets('/echo')[0]);
    assert.equal(JSON.parse(r.body.toString('utf8')).headers['proxy-authorization'], undefined);
  });
});

describe('keep-alive and closing', () => {
  test('sequential requests through one dispatcher reuse one proxy connection', async () => {
    const proxy = await startForwardProxy();
    const socks = await startSocksFixture();
    try {
      const d = cache.get(proxyRecord('http', proxy.port));
      const [plain, tls] = targets('/json');
      await attempt(d, plain);
      await attempt(d, plain);
      assert.equal(proxy.connections, 1);
      await attempt(d, tls);
      await attempt(d, tls);
      assert.equal(proxy.connections, 2, 'one more connection: the CONNECT tunnel, reused');
      assert.equal(proxy.requests.filter((r) => r.method === 'CONNECT').length, 1);
      const s = cache.get(proxyRecord('socks5', socks.port));
      await attempt(s, tls);
      await attempt(s, tls);
      assert.equal(socks.connections, 1);
    } finally {
      await proxy.close();
      await socks.close();
    }
  });

  test('closing a deleted proxy ends its sockets; the cache forgets it', async () => {
    const proxy = await startForwardProxy();
    try {
      const record = proxyRecord('http', proxy.port);
      const d = cache.get(record);
      assert.equal(cache.get(record), d, 'one dispatcher per proxy');
      await attempt(d, targets('/json')[0]);
      await attempt(d, targets('/json')[1]);
      assert.equal(proxy.openSockets, 2);
      const size = cache.size;
      await cache.close(record.id);
      await waitFor(() => proxy.openSockets === 0);
      assert.equal(cache.size, size - 1);
      assert.notEqual(cache.get(record), d);
    } finally {
      await proxy.close();
    }
  });

  test('a changed address or credential gets a new dispatcher', () => {
    const record = proxyRecord('http', 1, { username: 'u', password: 'a' });
    const d = cache.get(record);
    assert.notEqual(cache.get({ ...record, password: 'b' }), d);
  });
});

describe('misbehaving proxies: each failure has the right kind', () => {
  test('a blackhole fails within the connect timeout for a tunnel or SOCKS, not at the deadline', async () => {
    const hole = await use(startBlackhole());
    for (const protocol of ['http', 'socks5'] as const) {
      const t0 = performance.now();
      const err = await failure(
        attempt(cache.get(proxyRecord(protocol, hole.port)), targets('/json')[1], { timeoutMs: 10_000 }),
      );
      const took = performance.now() - t0;
      assertFailure(err, { kind: 'timeout', proxyFault: true, mayHaveReachedTarget: false });
      assert.ok(
        took >= CONNECT_TIMEOUT_MS - 50 && took < CONNECT_TIMEOUT_MS + 1_500,
        `${protocol} took ${took} ms`,
      );
    }
  });

  test('a blackhole in absolute-URI form times out at the deadline; the request may have left', async () => {
    const hole = await use(startBlackhole());
    const err = await failure(
      attempt(cache.get(proxyRecord('http', hole.port)), targets('/json')[0], { timeoutMs: 400 }),
    );
    assertFailure(err, { kind: 'timeout', proxyFault: true, mayHaveReachedTarget: true });
  });

  test('nothing listening: connect, never reached', async () => {
    const port = await closedPort();
    for (const protocol of ['http', 'https', 'socks4', 'socks5'] as const) {
      const err = await failure(attempt(cache.get(proxyRecord(protocol, port)), targets('/json')[1]));
      assertFailure(err, { kind: 'connect', proxyFault: true, mayHaveReachedTarget: false });
    }
  });

  test('a proxy that resets: connect before the request left, connection_lost after', async () => {
    const reset = await use(startResetter());
    const d = cache.get(proxyRecord('http', reset.port));
    assertFailure(await failure(attempt(d, targets('/json')[1])), {
      kind: 'connect',
      proxyFault: true,
      mayHaveReachedTarget: false,
    });
    const lost = await failure(attempt(d, targets('/json')[0]));
    assert.ok(lost.kind === 'connection_lost' || lost.kind === 'connect', lost.kind);
    assert.equal(lost.proxyFault, true);
    const socks = await failure(attempt(cache.get(proxyRecord('socks5', reset.port)), targets('/json')[0]));
    assertFailure(socks, { kind: 'connect', proxyFault: true, mayHaveReachedTarget: false });
  });

  test('407 from the proxy is proxy_auth in both forms, and from real proxies with a wrong password', async () => {
    const demander = await use(startAuthDemander());
    const wrong = { username: USER, password: 'wrong-Pw-9' };
    const records = [
      proxyRecord('http', demander.port),
      proxyRecord('http', fixtureProxy.port, wrong),
      proxyRecord('http', tinyproxy.port, wrong),
      proxyRecord('https', tlsProxy.port),
    ];
    for (const r of records) {
      for (const url of targets('/json')) {
        const err = await failure(attempt(cache.get(r), url));
        assertFailure(err, { kind: 'proxy_auth', proxyFault: true, mayHaveReachedTarget: false });
        assert.ok(!errorText(err).includes(SECRET) && !errorText(err).includes('wrong-Pw-9'));
      }
    }
    for (const r of [
      proxyRecord('socks5', danteAuth.port, wrong),
      proxyRecord('socks5h', socksFixture.port, wrong),
    ]) {
      const err = await failure(attempt(cache.get(r), targets('/json')[0]));
      assertFailure(err, { kind: 'proxy_auth', proxyFault: true, mayHaveReachedTarget: false });
      assert.ok(!errorText(err).includes('wrong-Pw-9'), errorText(err));
    }
  });

  test('garbage is proxy_protocol; a refused CONNECT is target_refused', async () => {
    const junk = await use(startGarbage());
    const d = cache.get(proxyRecord('http', junk.port));
    assertFailure(await failure(attempt(d, targets('/json')[1])), {
      kind: 'proxy_protocol',
      proxyFault: true,
      mayHaveReachedTarget: false,
    });
    assertFailure(await failure(attempt(d, targets('/json')[0])), {
      kind: 'proxy_protocol',
      proxyFault: true,
      mayHaveReachedTarget: true,
    });
    const refuser = await use(startConnectRefuser(403));
    const err = await failure(attempt(cache.get(proxyRecord('http', refuser.port)), targets('/json')[1]));
    assertFailure(err, { kind: 'target_refused', proxyFault: false, mayHaveReachedTarget: false });
  });

  test('a slow proxy: CONNECT bounded by the connect timeout, absolute-URI by the deadline', async () => {
    const slow = await use(startForwardProxy({ delayMs: 2_500 }));
    const d = cache.get(proxyRecord('http', slow.port));
    assertFailure(await failure(attempt(d, targets('/json')[1], { timeoutMs: 5_000 })), {
      kind: 'timeout',
      proxyFault: true,
      mayHaveReachedTarget: false,
    });
    assertFailure(await failure(attempt(d, targets('/json')[0], { timeoutMs: 300 })), {
      kind: 'timeout',
      proxyFault: true,
      mayHaveReachedTarget: true,
    });
  });

  test("an unreachable target is the target's problem, not the proxy's", async () => {
    const closed = await closedPort();
    const records = [
      proxyRecord('http', tinyproxy.port, { username: USER, password: SECRET }),
      proxyRecord('socks5', dante.port),
      proxyRecord('socks4', dante.port),
    ];
    for (const r of records) {
      const err = await failure(attempt(cache.get(r), `https://127.0.0.1:${closed}/`));
      assertFailure(err, { kind: 'target_unreachable', proxyFault: false, mayHaveReachedTarget: false });
    }
  });

  test('TLS: an untrusted https proxy is tls (proxy fault); an untrusted target is target_tls (not)', async () => {
    const strict = new DispatcherCache({ connectTimeoutMs: CONNECT_TIMEOUT_MS });
    closers.unshift(() => strict.closeAll());
    const viaTls = await failure(
      attempt(strict.get(proxyRecord('https', tlsProxy.port)), targets('/json')[0]),
    );
    assertFailure(viaTls, { kind: 'tls', proxyFault: true, mayHaveReachedTarget: false });
    const record = proxyRecord('http', fixtureProxy.port, { username: USER, password: SECRET });
    const target = await failure(attempt(strict.get(record), targets('/json')[1]));
    assertFailure(target, { kind: 'target_tls', proxyFault: false, mayHaveReachedTarget: false });
  });
});

describe("raw tunnels (the listeners' CONNECT and SOCKS5): each failure has the right kind and message", () => {
  const to = () => ({ hostname: '127.0.0.1', port: http.port });
  const soon = (ms: number) => performance.now() + ms;

  test('opens through a real proxy with credentials, and the socket carries the target', async () => {
    const record = proxyRecord('http', fixtureProxy.port, { username: USER, password: SECRET });
    const socket = await cache.tunnel(record, to(), { deadline: soon(5_000) });
    try {
      socket.write(`GET /json HTTP/1.1\r\nHost: 127.0.0.1:${http.port}\r\nConnection: close\r\n\r\n`);
      const text = await new Promise<string>((resolve) => {
        let t = '';
        socket.on('data', (c: Buffer) => (t += c.toString('latin1')));
        socket.once('close', () => resolve(t));
        socket.resume();
      });
      assert.match(text, /^HTTP\/1\.1 200/);
    } finally {
      socket.destroy();
    }
  });

  test('nothing listening: connect, "could not connect" (the CONNECT was written before the socket connected)', async () => {
    const port = await closedPort();
    for (const protocol of ['http', 'socks5'] as const) {
      const err = await failure(cache.tunnel(proxyRecord(protocol, port), to(), { deadline: soon(5_000) }));
      assertFailure(err, { kind: 'connect', proxyFault: true, mayHaveReachedTarget: false });
    }
    const err = await failure(cache.tunnel(proxyRecord('http', port), to(), { deadline: soon(5_000) }));
    assert.match(err.message, /could not connect to the proxy/);
  });

  test('a reset at once is a failed connect; a hang-up after the CONNECT left is "during CONNECT"', async () => {
    // Node reports a reset that arrives with the connection as the connect's own failure.
    const reset = await use(startResetter());
    const early = await failure(
      cache.tunnel(proxyRecord('http', reset.port), to(), { deadline: soon(5_000) }),
    );
    assertFailure(early, { kind: 'connect', proxyFault: true, mayHaveReachedTarget: false });
    const hangUp = await use(startHangUp());
    const err = await failure(
      cache.tunnel(proxyRecord('http', hangUp.port), to(), { deadline: soon(5_000) }),
    );
    assertFailure(err, { kind: 'connect', proxyFault: true, mayHaveReachedTarget: false });
    assert.match(err.message, /during CONNECT/);
    assert.equal(hangUp.heads.length, 1, 'the CONNECT reached the proxy');
  });

  test('a blackhole: the earlier of the call deadline and the connect budget ends it, each with its message', async () => {
    const hole = await use(startBlackhole());
    for (const protocol of ['http', 'socks5'] as const) {
      const t0 = performance.now();
      const err = await failure(
        cache.tunnel(proxyRecord(protocol, hole.port), to(), { deadline: soon(200) }),
      );
      const took = performance.now() - t0;
      assertFailure(err, { kind: 'timeout', proxyFault: true, mayHaveReachedTarget: false });
      assert.match(err.message, /deadline reached before the tunnel was open/, protocol);
      assert.ok(took >= 150 && took < CONNECT_TIMEOUT_MS, `${protocol} took ${took} ms`);
    }
    const err = await failure(cache.tunnel(proxyRecord('http', hole.port), to(), { deadline: soon(10_000) }));
    assertFailure(err, { kind: 'timeout', proxyFault: true, mayHaveReachedTarget: false });
    assert.match(err.message, /timed out reaching the proxy after 1000 ms/);
  });

  test('the caller leaving is aborted, at once, and a caller already gone never dials', async () => {
    const hole = await use(startBlackhole());
    const caller = new AbortController();
    const t0 = performance.now();
    const pending = cache.tunnel(proxyRecord('http', hole.port), to(), {
      deadline: soon(10_000),
      signal: caller.signal,
    });
    setTimeout(() => caller.abort(), 100);
    const err = await failure(pending);
    assertFailure(err, { kind: 'aborted', proxyFault: false, mayHaveReachedTarget: false });
    assert.ok(performance.now() - t0 < 600, 'not at the connect budget');
    const gone = AbortSignal.abort();
    const before = hole.connections;
    const early = await failure(
      cache.tunnel(proxyRecord('http', hole.port), to(), { deadline: soon(10_000), signal: gone }),
    );
    assertFailure(early, { kind: 'aborted', proxyFault: false, mayHaveReachedTarget: false });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(hole.connections, before, 'no connection was opened');
  });
});

describe("the target's answers", () => {
  const via = () => cache.get(proxyRecord('http', fixtureProxy.port, { username: USER, password: SECRET }));

  test('503 and 401 from the target are responses, not errors; 3xx is not followed', async () => {
    for (const url of targets('')) {
      for (const code of [503, 401]) {
        const r = await attempt(via(), new URL(`/status/${code}`, url));
        assert.equal(r.statusCode, code);
      }
      const r = await attempt(via(), new URL('/redirect', url));
      assert.equal(r.statusCode, 302);
      assert.equal(r.headers.location, '/json');
    }
  });

  test('the response cap: exactly the cap passes, one byte more fails, declared or streamed', async () => {
    const [plain, tls] = targets('');
    const ok = await attempt(via(), new URL('/big?bytes=4096&stream=1', tls), { maxResponseBytes: 4096 });
    assert.equal(ok.body.length, 4096);
    for (const path of ['/big?bytes=4097', '/big?bytes=300000&stream=1']) {
      for (const base of [plain, tls]) {
        const err = await failure(attempt(via(), new URL(path, base), { maxResponseBytes: 4096 }));
        assertFailure(err, { kind: 'response_too_large', proxyFault: false, mayHaveReachedTarget: true });
      }
    }
  });

  test('a POST that timed out waiting for the target reached it once and is reported as such', async () => {
    const before = https.count('POST', '/slow');
    const err = await failure(
      attempt(via(), targets('/slow?ms=1500')[1], { method: 'POST', body: 'x', timeoutMs: 500 }),
    );
    assertFailure(err, { kind: 'timeout', proxyFault: true, mayHaveReachedTarget: true });
    assert.equal(https.count('POST', '/slow'), before + 1);
  });

  test('a body still arriving at the deadline is response_timeout, not a proxy fault', async () => {
    const err = await failure(attempt(via(), targets('/slow-body?ms=1500')[0], { timeoutMs: 400 }));
    assertFailure(err, { kind: 'response_timeout', proxyFault: false, mayHaveReachedTarget: true });
  });

  test('the caller going away is aborted', async () => {
    const controller = new AbortController();
    const pending = attempt(via(), targets('/slow?ms=1000')[0], { signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    assertFailure(await failure(pending), { kind: 'aborted', proxyFault: false, mayHaveReachedTarget: true });
  });
});
