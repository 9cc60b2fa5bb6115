import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import https from 'node:https';
import { after, before, describe, test } from 'node:test';
import tls from 'node:tls';
import { type TlsMaterial, testTls } from './fixtures/certs.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { listen, SocketTracker, stop } from './fixtures/server.ts';
import { addUpstream, connectVia, type ListeningApp, listeningApp } from './helpers/forward.ts';
import { curl } from './helpers/forward-clients.ts';

/*
 * HTTPS inspection at its edges: a target whose certificate is not trusted, passthrough hosts, the
 * SOCKS5 listener, the client's `inspect` username key, and a thousand distinct hosts (the leaf cache
 * stays bounded, the descriptors come back).
 */

async function startSite(m: TlsMaterial): Promise<{ port: number; close(): Promise<void> }> {
  const server = https.createServer({ key: m.key, cert: m.cert }, (req, res) => {
    req.resume();
    res.end(`site:${req.url}`);
  });
  const tracker = new SocketTracker(server);
  return { port: await listen(server), close: () => stop(server, tracker) };
}

let material: TlsMaterial;
let site: { port: number; close(): Promise<void> };
let proxy: ForwardProxy;

before(async () => {
  material = await testTls();
  site = await startSite(material);
  proxy = await startForwardProxy();
});
after(async () => {
  await Promise.all([site.close(), proxy.close()]);
});

async function app(
  env: Record<string, string>,
  trustSite = true,
): Promise<{ t: ListeningApp; ca: string; id: string }> {
  const t = await listeningApp(env, trustSite ? { upstreamTls: { ca: material.ca } } : {});
  const id = await addUpstream(t, { url: `http://127.0.0.1:${proxy.port}` });
  return { t, id, ca: await t.services.inspection.authority.caPem() };
}

describe('inspection: targets, passthrough, SOCKS5, the username key', () => {
  test('a target certificate Rota does not trust: 502 TARGET_CERT_INVALID inside the tunnel, the proxy unharmed', async () => {
    const { t, ca, id } = await app({ ROTA_INSPECT_HOSTS: '127.0.0.1' }, false);
    try {
      const r = await curl(`https://127.0.0.1:${site.port}/x`, {
        proxy: `http://127.0.0.1:${t.httpPort}`,
        ca,
      });
      assert.equal(r.status, 502, r.stderr);
      assert.equal(r.headers['x-rota-error'], 'TARGET_CERT_INVALID');
      assert.equal(t.services.breakers.state(id), 'closed');
      assert.equal(t.services.pool.get(id)?.stats.failed, 0);
    } finally {
      await t.close();
    }
  });

  test('passthrough wins: the client sees the target’s own certificate, bytes untouched', async () => {
    const { t, ca } = await app({ ROTA_INSPECT_HOSTS: '*' });
    try {
      const put = await t.app.inject({
        method: 'PUT',
        url: '/api/v1/inspection',
        payload: { passthrough: ['127.0.0.1'] },
      });
      assert.equal(put.statusCode, 200, put.body);
      const proxyUrl = `http://127.0.0.1:${t.httpPort}`;
      const own = await curl(`https://127.0.0.1:${site.port}/p`, { proxy: proxyUrl, ca: material.ca });
      assert.equal(own.status, 200, own.stderr);
      assert.equal(own.body, 'site:/p');
      assert.equal(own.headers['x-rota-proxy-id'], undefined, 'not Rota’s answer: the site’s own');
      const withRota = await curl(`https://127.0.0.1:${site.port}/p`, { proxy: proxyUrl, ca });
      assert.notEqual(withRota.code, 0, 'Rota’s CA does not sign what the client sees');
    } finally {
      await t.close();
    }
  });

  test('SOCKS5 and the username key: `-inspect-on` opens a host no setting names', async () => {
    const { t, ca, id } = await app({});
    try {
      const viaSocks = await curl(`https://127.0.0.1:${site.port}/s`, {
        socks5Hostname: `127.0.0.1:${t.socksPort}`,
        proxyUser: 'scraper-inspect-on:',
        ca,
      });
      assert.equal(viaSocks.status, 200, viaSocks.stderr);
      assert.equal(viaSocks.headers['x-rota-proxy-id'], id);
      const viaHttp = await curl(`https://127.0.0.1:${site.port}/h`, {
        proxy: `http://127.0.0.1:${t.httpPort}`,
        proxyUser: 'scraper-inspect-on:',
        ca,
      });
      assert.equal(viaHttp.headers['x-rota-proxy-id'], id);
      const plain = await curl(`https://127.0.0.1:${site.port}/n`, {
        proxy: `http://127.0.0.1:${t.httpPort}`,
        ca: material.ca,
      });
      assert.equal(
        plain.status,
        200,
        'without the key nor a setting: a plain tunnel, the site’s certificate',
      );
    } finally {
      await t.close();
    }
  });
});

describe('inspection: a thousand distinct hosts', () => {
  test('the leaf cache stays bounded and the descriptors come back', async () => {
    const { t, ca } = await app({
      ROTA_INSPECT_HOSTS: '*',
      ROTA_INSPECT_CACHE: '100',
      ROTA_INSPECT_NEW_HOSTS_PER_MINUTE: '10000',
    });
    try {
      const fds = () => readdirSync('/proc/self/fd').length;
      const baseline = fds();
      for (let i = 0; i < 1000; i++) {
        const host = `127.1.${Math.floor(i / 250)}.${(i % 250) + 1}`;
        const tun = await connectVia(t.httpPort, `${host}:443`);
        assert.equal(
          tun.status,
          200,
          `host ${i}: ${tun.head} open ${t.services.connections.guard.caps.total}`,
        );
        await new Promise<void>((resolve, reject) => {
          const s = tls.connect({ socket: tun.socket, ca, host }, () => {
            assert.equal(s.getPeerX509Certificate()?.checkIP(host), host);
            s.destroy();
            resolve();
          });
          s.once('error', reject);
        });
      }
      assert.ok(t.services.inspection.leaves.size <= 100, `cached: ${t.services.inspection.leaves.size}`);
      assert.equal(t.services.inspection.leaves.made, 1000, 'a leaf per host, each verified by the client');
      const deadline = Date.now() + 5_000;
      while (fds() > baseline + 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.ok(fds() <= baseline + 2, `fds ${fds()} against ${baseline}`);
    } finally {
      await t.close();
    }
  });
});

describe('inspection: a client naming ever new hosts', () => {
  test('past its budget of new hosts a minute its tunnels close; kept hosts and other clients go on', async () => {
    const { t, ca } = await app({ ROTA_INSPECT_HOSTS: '*', ROTA_INSPECT_NEW_HOSTS_PER_MINUTE: '3' });
    const handshake = async (host: string, localAddress?: string): Promise<boolean> => {
      const tun = await connectVia(t.httpPort, `${host}:443`, {}, localAddress);
      assert.equal(tun.status, 200);
      return new Promise<boolean>((resolve) => {
        const s = tls.connect({ socket: tun.socket, ca, host }, () => {
          s.destroy();
          resolve(true);
        });
        s.once('error', () => resolve(false));
      });
    };
    try {
      for (const i of [1, 2, 3]) assert.equal(await handshake(`127.2.0.${i}`), true, `new host ${i}`);
      assert.equal(await handshake('127.2.0.4'), false, 'a fourth new host this minute: closed');
      assert.equal(t.services.listeners.metrics.handshakes.leaf_budget, 1);
      assert.equal(t.services.inspection.leaves.made, 3, 'no leaf made for it');
      assert.equal(await handshake('127.2.0.2'), true, 'a kept host costs nothing');
      assert.equal(await handshake('127.2.0.4', '127.0.0.9'), true, 'another client has its own budget');
    } finally {
      await t.close();
    }
  });
});
