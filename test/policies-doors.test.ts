import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type TlsMaterial, testTls } from './fixtures/certs.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import {
  addUpstream,
  basic,
  connectVia,
  getOverTunnel,
  type ListeningApp,
  listeningApp,
  socks5,
  viaProxy,
} from './helpers/forward.ts';
import { curl } from './helpers/forward-clients.ts';
import { putRules } from './helpers/policies.ts';

/*
 * The same rule through every door of the listeners (CONNECT, SOCKS5, inspected HTTPS), RFC 9209
 * Proxy-Status on Rota's own refusals, and the challenge mode that lets browsers pass parameters with
 * auth off. Three proxies leave from their own addresses: p0 127.0.0.51 (res), p1 .52 and p2 .53 (dc).
 */

const EGRESS = ['127.0.0.51', '127.0.0.52', '127.0.0.53'];
const TAGS = [['res'], ['dc'], ['dc']];
let material: TlsMaterial;
let plain: TargetServer;
let secure: TargetServer;
let proxies: ForwardProxy[];
let t: ListeningApp;
let ids: string[];

before(async () => {
  material = await testTls();
  plain = await startTarget();
  secure = await startTarget({ tls: material });
  proxies = await Promise.all(EGRESS.map((egress) => startForwardProxy({ egress })));
  t = await listeningApp({}, { upstreamTls: { ca: material.ca } });
  ids = [];
  for (const [i, p] of proxies.entries()) {
    ids.push(await addUpstream(t, { url: `http://127.0.0.1:${p.port}`, tags: TAGS[i] }));
  }
});
after(async () => {
  await t.close();
  await Promise.all([plain.close(), secure.close(), ...proxies.map((p) => p.close())]);
});

describe('one rule on every door', () => {
  test('CONNECT: the rule chooses the proxy; the 200 names it in X-Rota-Proxy-Id', async () => {
    await putRules(t, [{ name: 'res', match: { hosts: ['127.0.0.1'] }, proxies: { tags_any: ['res'] } }]);
    for (let i = 0; i < 4; i++) {
      const tun = await connectVia(t.httpPort, `127.0.0.1:${plain.port}`);
      assert.equal(tun.status, 200);
      assert.match(tun.head, new RegExp(`X-Rota-Proxy-Id: ${ids[0]}`));
      const text = await getOverTunnel(tun.socket, `127.0.0.1:${plain.port}`, '/json');
      assert.match(text, /^HTTP\/1\.1 200/);
      assert.equal(plain.requests.at(-1)?.from, EGRESS[0]);
    }
  });

  test('SOCKS5: the same rule', async () => {
    await putRules(t, [{ name: 'dc', match: { hosts: ['127.0.0.1'] }, proxies: { tags_none: ['res'] } }]);
    for (let i = 0; i < 4; i++) {
      const r = await socks5(t.socksPort, { host: '127.0.0.1', port: plain.port });
      assert.equal(r.reply, 0);
      const text = await getOverTunnel(r.socket, `127.0.0.1:${plain.port}`, '/json');
      assert.match(text, /^HTTP\/1\.1 200/);
      assert.ok([EGRESS[1], EGRESS[2]].includes(plain.requests.at(-1)?.from ?? ''));
    }
  });

  test('inspected HTTPS: `inspect` opens the tunnel, and the rule’s paths match the requests inside', async () => {
    await putRules(t, [
      {
        name: 'json-dc',
        match: { hosts: ['127.0.0.1'], paths: ['/json'] },
        proxies: { tags_any: ['dc'] },
        inspect: true,
      },
      { name: 'rest-res', match: { hosts: ['127.0.0.1'] }, proxies: { tags_any: ['res'] } },
    ]);
    const ca = await t.services.inspection.authority.caPem();
    const proxy = `http://127.0.0.1:${t.httpPort}`;
    const a = await curl(`https://127.0.0.1:${secure.port}/json`, {
      proxy,
      ca,
      proxyUser: 'c-session-ins:x',
    });
    assert.equal(a.status, 200, a.stderr);
    assert.equal(a.headers['x-rota-policy'], 'json-dc');
    assert.equal(a.headers['x-rota-attempts'], '1');
    assert.equal(a.headers['x-rota-session'], 'ins');
    assert.ok([ids[1], ids[2]].includes(a.headers['x-rota-proxy-id'] ?? ''));
    assert.ok([EGRESS[1], EGRESS[2]].includes(secure.requests.at(-1)?.from ?? ''));
    const b = await curl(`https://127.0.0.1:${secure.port}/echo`, { proxy, ca });
    assert.equal(b.status, 200, b.stderr);
    assert.equal(b.headers['x-rota-policy'], 'rest-res');
    assert.equal(secure.requests.at(-1)?.from, EGRESS[0]);
    await putRules(t, []);
  });

  test("Rota's own refusals carry Proxy-Status beside X-Rota-Error", async () => {
    const tun = await connectVia(t.httpPort, '10.0.0.1:80');
    assert.equal(tun.status, 403);
    assert.match(tun.head, /X-Rota-Error: SSRF_BLOCKED/);
    assert.match(tun.head, /Proxy-Status: rota; error=destination_ip_prohibited; details="SSRF_BLOCKED"/);
    tun.socket.destroy();
    const a = await viaProxy(t.httpPort, 'http://10.0.0.1/x');
    assert.equal(a.status, 403);
    assert.equal(a.headers['proxy-status'], 'rota; error=destination_ip_prohibited; details="SSRF_BLOCKED"');
  });
});

describe('ROTA_PROXY_CHALLENGE: browsers pass their parameters with auth off', () => {
  let c: ListeningApp;
  before(async () => {
    c = await listeningApp({ ROTA_PROXY_CHALLENGE: 'true' });
    await addUpstream(c, { url: `http://127.0.0.1:${proxies[0]?.port}` });
  });
  after(() => c.close());

  test('407 without credentials; any password then, and the username’s session is used', async () => {
    const bare = await viaProxy(c.httpPort, `http://127.0.0.1:${plain.port}/json`);
    assert.equal(bare.status, 407);
    assert.equal(bare.headers['proxy-authenticate'], 'Basic realm="rota"');
    assert.equal(
      bare.headers['proxy-status'],
      'rota; error=http_request_denied; details="PROXY_AUTH_REQUIRED"',
    );
    const tun = await connectVia(c.httpPort, `127.0.0.1:${plain.port}`);
    assert.equal(tun.status, 407, 'CONNECT too');
    tun.socket.destroy();
    const keyed = await viaProxy(c.httpPort, `http://127.0.0.1:${plain.port}/json`, {
      headers: { 'proxy-authorization': basic('me-session-browser1', 'anything') },
    });
    assert.equal(keyed.status, 200);
    assert.equal(keyed.headers['x-rota-session'], 'browser1');
    const socks = await socks5(c.socksPort, { host: '127.0.0.1', port: plain.port });
    assert.equal(socks.reply, 0, 'SOCKS5 is not challenged');
    socks.socket.destroy();
  });
});
