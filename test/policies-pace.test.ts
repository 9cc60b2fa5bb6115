import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { startTarget, type TargetServer } from './fixtures/target.ts';
import { type BanRig, banRig } from './helpers/ban-rig.ts';
import { addUpstream, basic, type ListeningApp, listeningApp, viaProxy } from './helpers/forward.ts';
import { putRules } from './helpers/policies.ts';

/*
 * host_rate_limit and callers that go away (src/policies/pace.ts, outbound/prelude.ts): a caller waiting
 * for its start gives it back when it disconnects, so a crowd that queues and leaves cannot keep a host
 * shut for the callers after it. Two fixture proxies and a site on 127.0.0.2. And a call that no proxy
 * could serve, whose target was therefore never checked by the SSRF rules, never waits for a start.
 */

let rig: BanRig;
before(async () => {
  rig = await banRig(['127.0.0.51', '127.0.0.52'], {});
});
after(() => rig.close());

/** An absolute-URI request through the listener that hangs up after `ms`, whatever it has received. */
async function leaveAfter(port: number, url: string, ms: number): Promise<string> {
  const socket = net.connect({ host: '127.0.0.1', port });
  let got = '';
  socket.setEncoding('latin1');
  socket.on('data', (c: string) => {
    got += c;
  });
  socket.on('error', () => {});
  socket.write(`GET ${url} HTTP/1.1\r\nHost: ${new URL(url).host}\r\n\r\n`);
  await new Promise((r) => setTimeout(r, ms));
  socket.destroy();
  return got;
}

describe('host_rate_limit and callers that leave', () => {
  test('eight callers that queue and hang up give their starts back: the next caller waits one interval, not nine', async () => {
    const { t, site } = rig;
    await putRules(t, [{ name: 'slow', match: { hosts: ['127.0.0.2'] }, host_rate_limit: '1/second' }]);
    const first = await viaProxy(t.httpPort, site.urlA('/first'));
    assert.equal(first.status, 200, 'the first start is at once');
    // Eight more queue for the next eight seconds, then hang up before their turn.
    const left = await Promise.all(
      Array.from({ length: 8 }, () => leaveAfter(t.httpPort, site.urlA('/left'), 300)),
    );
    assert.deepEqual(left, Array(8).fill(''), 'none was answered: each was still waiting');
    const t0 = performance.now();
    const next = await viaProxy(t.httpPort, site.urlA('/next'));
    const waited = performance.now() - t0;
    assert.equal(next.status, 200);
    // Its start is the one after the first (about 0.7 s away by now); the eight would have put it 9 s out.
    assert.ok(waited < 4_000, `the next caller waited ${waited.toFixed(0)} ms`);
    assert.equal(
      site.seen.filter((s) => s.path === '/left').length,
      0,
      'no request of theirs reached the site',
    );
    await putRules(t, []);
  });
});

describe('min_interval_ms and a session', () => {
  test('a session waits out its own proxy’s interval, with an in-flight cap set too (it used to wait for a slot until its deadline)', async () => {
    const { t, site } = rig;
    await putRules(t, [
      { name: 'polite', match: { hosts: ['127.0.0.2'] }, min_interval_ms: 1000, max_in_flight_per_proxy: 4 },
    ]);
    const auth = { 'proxy-authorization': basic('crawler-session-polite1', 'x') };
    const first = await viaProxy(t.httpPort, site.urlA('/p1'), { headers: auth });
    assert.equal(first.status, 200);
    const t0 = performance.now();
    const second = await viaProxy(t.httpPort, site.urlA('/p2'), { headers: auth });
    const waited = performance.now() - t0;
    assert.equal(second.status, 200, String(second.headers['x-rota-error']));
    assert.equal(
      second.headers['x-rota-proxy-id'],
      first.headers['x-rota-proxy-id'],
      'the session kept its proxy',
    );
    assert.ok(waited >= 800 && waited < 4_000, `waited ${waited.toFixed(0)} ms: about the interval`);
    await putRules(t, []);
  });
});

describe('host_rate_limit and the SSRF rules', () => {
  let target: TargetServer;
  let proxy: ForwardProxy;
  let t: ListeningApp;
  before(async () => {
    [target, proxy] = await Promise.all([startTarget(), startForwardProxy()]);
    // inside.test is 127.0.0.1, outside what this instance allows: refused once resolved.
    t = await listeningApp(
      { ROTA_SSRF_ALLOW: '127.0.0.2/32', ROTA_TIMEOUT: '10' },
      { resolve: async (host) => (host === 'inside.test' ? ['127.0.0.1'] : []) },
    );
  });
  after(async () => {
    await t.close();
    await Promise.all([target.close(), proxy.close()]);
  });

  test('with no proxy to serve it a call is refused at once, never queued unchecked for a proxy added later', async () => {
    await putRules(t, [{ name: 'all', match: { hosts: ['*'] }, host_rate_limit: '1/second' }]);
    const url = `http://inside.test:${target.port}/secret`;
    assert.equal((await viaProxy(t.httpPort, url)).status, 503, 'an empty pool');
    const t0 = performance.now();
    const second = viaProxy(t.httpPort, url);
    await new Promise((r) => setTimeout(r, 200));
    await addUpstream(t, { url: `http://127.0.0.1:${proxy.port}` });
    const answer = await second;
    assert.equal(answer.status, 503, 'answered as the pool was when it came: it did not wait for a start');
    assert.ok(performance.now() - t0 < 900, 'at once');
    assert.equal(proxy.requests.length, 0, 'the unchecked target never reached a proxy');
    await new Promise((r) => setTimeout(r, 1_000));
    const checked = await viaProxy(t.httpPort, url);
    assert.equal(checked.status, 403, 'with a proxy, the SSRF rules judge it');
    assert.equal(checked.headers['x-rota-error'], 'SSRF_BLOCKED');
    assert.equal(proxy.requests.length, 0);
  });
});
