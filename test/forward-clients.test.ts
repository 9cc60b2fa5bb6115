import assert from 'node:assert/strict';
import { once } from 'node:events';
import nodeHttp from 'node:http';
import { after, before, describe, it } from 'node:test';
import { type TlsMaterial, testTls } from './fixtures/certs.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { assertCurlOk, curl, echoPath, proxyIdOf } from './helpers/forward-clients.ts';
import { behindRelay, type RotaGateway, startRotaGateway, type Upstream } from './helpers/forward-rota.ts';
import { startAllOrClose, startDante, startSquid, startTinyproxy } from './helpers/real-proxies.ts';
import { type Relay, startRelay } from './helpers/relay.ts';

/*
 * Rota's forward-proxy listeners (HTTP on ROTA_PROXY_PORT, SOCKS5 on ROTA_SOCKS_PORT) with the curl CLI
 * as the client and each real upstream alone in the pool: tinyproxy, squid and dante, each with and
 * without credentials. Every upstream sits behind a counting relay, so a test sees the request cross the
 * upstream it expects, besides the X-Rota-Proxy-Id Rota answers with.
 * forward-clients-pool.test.ts: routing parameters, Python requests and Chromium through a pool;
 * forward-clients-auth.test.ts: the listeners with ROTA_REQUIRE_AUTH.
 */

const TINY_AUTH = { username: 'tiny-up', password: 'Tiny-up-pw-1' };
const SQUID_AUTH = { username: 'squid-up', password: 'Squid-up-pw-1' };

let tls: TlsMaterial;
let http: TargetServer;
let https: TargetServer;
let rota: RotaGateway;
let ups: Upstream[] = [];

before(async () => {
  tls = await testTls();
  const [h, s, r, tiny, tinyAuth, squid, squidAuth, dante, danteAuth] = await startAllOrClose([
    startTarget(),
    startTarget({ tls }),
    // localhost by name: the SOCKS5 tests send targets as domain names. ::1 for the IPv6 address type.
    startRotaGateway({
      ROTA_SSRF_ALLOW: '127.0.0.0/8,::1/128,localhost',
      ROTA_RATE_LIMIT_ADD_PROXY: '100/minute',
    }),
    startTinyproxy(),
    startTinyproxy({ auth: TINY_AUTH }),
    startSquid(),
    startSquid({ auth: SQUID_AUTH }),
    startDante(),
    startDante({ auth: true }),
  ]);
  [http, https, rota] = [h, s, r];
  ups = await Promise.all([
    behindRelay('tinyproxy', 'http', tiny),
    behindRelay('tinyproxy with credentials', 'http', tinyAuth),
    behindRelay('squid', 'http', squid),
    behindRelay('squid with credentials', 'http', squidAuth),
    behindRelay('dante', 'socks5h', dante),
    behindRelay('dante with credentials', 'socks5h', danteAuth),
  ]);
});

after(async () => {
  await rota?.close();
  // Unset when `before` failed: startAllOrClose has closed what it started.
  await Promise.all([http, https, ...ups].map((f) => f?.close()));
});

function up(name: string): Upstream {
  const found = ups.find((u) => u.name === name);
  if (!found) throw new Error(`no upstream ${name}`);
  return found;
}

/** Adds `u` alone to the pool (the tests of this file run one at a time) for the length of `run`. */
async function alone(u: Upstream, run: (id: string) => Promise<void>): Promise<void> {
  const id = await rota.addProxy(u.body());
  try {
    await run(id);
  } finally {
    await rota.deleteProxy(id);
  }
  assert.deepEqual(u.relay.refused, [], 'nothing asked for a host off loopback');
}

async function httpListener(u: Upstream, id: string, tag: string): Promise<void> {
  const abs = await curl(http.url(`/echo?via=${tag}-abs`).href, { proxy: rota.httpProxy });
  assertCurlOk(abs, 'absolute URI');
  assert.equal(abs.headers['x-rota-proxy-id'], id);
  assert.equal(echoPath(abs), `/echo?via=${tag}-abs`);
  assert.ok(u.relay.count(`/echo?via=${tag}-abs `) >= 1, `crossed ${u.name}: ${u.relay.lines.join('\n')}`);

  const tunnels = u.relay.tunnels(`127.0.0.1:${https.port}`);
  const con = await curl(https.url(`/echo?via=${tag}-connect`).href, { proxy: rota.httpProxy, ca: tls.ca });
  assertCurlOk(con, 'CONNECT');
  assert.deepEqual(
    con.blocks.map((b) => b.status),
    [200, 200],
    'Rota answers CONNECT, then the target answers through the tunnel',
  );
  assert.equal(proxyIdOf(con), id);
  assert.equal(echoPath(con), `/echo?via=${tag}-connect`);
  assert.equal(u.relay.tunnels(`127.0.0.1:${https.port}`), tunnels + 1, `a tunnel through ${u.name}`);
}

async function socksListener(u: Upstream, tag: string): Promise<void> {
  const socks = { socks5Hostname: rota.socksAddr };
  const plain = await curl(http.url(`/echo?via=${tag}-socks`).href, socks);
  assertCurlOk(plain, 'SOCKS5 to an http target');
  assert.equal(echoPath(plain), `/echo?via=${tag}-socks`);
  assert.ok(u.relay.count(`/echo?via=${tag}-socks `) >= 1, `crossed ${u.name}: ${u.relay.lines.join('\n')}`);

  const named = u.relay.tunnels(`localhost:${https.port}`);
  const tlsd = await curl(`https://localhost:${https.port}/echo?via=${tag}-socks-tls`, {
    ...socks,
    ca: tls.ca,
  });
  assertCurlOk(tlsd, 'SOCKS5 (domain name) to an https target');
  assert.equal(echoPath(tlsd), `/echo?via=${tag}-socks-tls`);
  assert.equal(u.relay.tunnels(`localhost:${https.port}`), named + 1, `the name went on to ${u.name}`);
}

describe('each upstream alone in the pool, behind both listeners', () => {
  for (const name of [
    'tinyproxy',
    'tinyproxy with credentials',
    'squid',
    'squid with credentials',
    'dante',
    'dante with credentials',
  ]) {
    it(`${name}: curl -x (http, https via CONNECT) and --socks5-hostname (http, https)`, async () => {
      const u = up(name);
      const tag = name.replace(/\W+/g, '-');
      await alone(u, async (id) => {
        await httpListener(u, id, tag);
        await socksListener(u, tag);
      });
    });
  }
});

describe('SOCKS5 address types and IPv6 targets', () => {
  let v6: nodeHttp.Server;
  let v6Port: number;
  let front: Relay;
  before(async () => {
    // A target on the IPv6 loopback; the fixtures listen on 127.0.0.1 only.
    v6 = nodeHttp.createServer((req, res) => res.end(`v6 ${req.url}`));
    v6.listen(0, '::1');
    await once(v6, 'listening');
    v6Port = (v6.address() as { port: number }).port;
    // In front of Rota's SOCKS5 listener, to see the address type curl sent.
    front = await startRelay(rota.socksPort);
  });
  after(async () => {
    await front?.close();
    v6?.closeAllConnections();
    v6?.close();
  });

  it('CONNECT by IPv4 (atyp 1), IPv6 (atyp 4) and domain name (atyp 3) all reach their target', async () => {
    await alone(up('squid'), async () => {
      const socks = `socks5://127.0.0.1:${front.port}`;
      const v4 = await curl(http.url('/echo?atyp=1').href, { proxy: socks });
      assertCurlOk(v4, 'IPv4');
      assert.equal(echoPath(v4), '/echo?atyp=1');
      const ipv6 = await curl(`http://[::1]:${v6Port}/atyp4`, { proxy: socks });
      assertCurlOk(ipv6, 'IPv6');
      assert.equal(ipv6.body, 'v6 /atyp4');
      const name = await curl(`http://localhost:${http.port}/echo?atyp=3`, {
        proxy: `socks5h://127.0.0.1:${front.port}`,
      });
      assertCurlOk(name, 'domain name');
      assert.equal(echoPath(name), '/echo?atyp=3');
      for (const line of [
        `SOCKS5 CONNECT 127.0.0.1:${http.port} atyp=1`,
        `SOCKS5 CONNECT [::1]:${v6Port} atyp=4`,
        `SOCKS5 CONNECT localhost:${http.port} atyp=3`,
      ]) {
        assert.ok(front.lines.includes(line), `${line} in:\n${front.lines.join('\n')}`);
      }
      assert.equal(up('squid').relay.tunnels(`[::1]:${v6Port}`), 1, 'squid was asked for [::1]');
    });
  });

  it('the HTTP listener takes an IPv6 target too, absolute URI and CONNECT', async () => {
    await alone(up('squid'), async (id) => {
      const abs = await curl(`http://[::1]:${v6Port}/abs6`, { proxy: rota.httpProxy });
      assertCurlOk(abs, 'absolute URI to [::1]');
      assert.deepEqual([abs.body, abs.headers['x-rota-proxy-id']], ['v6 /abs6', id]);
      const con = await curl(`http://[::1]:${v6Port}/con6`, {
        proxy: rota.httpProxy,
        extraArgs: ['--proxytunnel'],
      });
      assertCurlOk(con, 'CONNECT [::1]');
      assert.deepEqual([con.body, proxyIdOf(con)], ['v6 /con6', id]);
    });
  });
});

describe('SSRF rules on the listeners', () => {
  it('a refused target is answered by Rota itself, before any upstream sees it', async () => {
    await alone(up('squid'), async () => {
      const seen = up('squid').relay.lines.length;
      const abs = await curl('http://169.254.169.254/latest/meta-data/', { proxy: rota.httpProxy });
      assert.equal(abs.status, 403);
      assert.equal(abs.headers['x-rota-error'], 'SSRF_BLOCKED');
      const con = await curl('https://169.254.169.254/', { proxy: rota.httpProxy });
      assert.equal(con.code, 56, con.stderr);
      assert.deepEqual(
        [con.blocks[0]?.status, con.blocks[0]?.headers['x-rota-error']],
        [403, 'SSRF_BLOCKED'],
      );
      const socks = await curl('http://169.254.169.254/', { socks5Hostname: rota.socksAddr });
      assert.equal(socks.code, 97, socks.stderr);
      assert.match(socks.stderr, /\(2\)/, 'SOCKS5 reply 2: connection not allowed by ruleset');
      assert.equal(up('squid').relay.lines.length, seen, 'the upstream saw nothing');
    });
  });
});
