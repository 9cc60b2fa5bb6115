import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { testTls } from './fixtures/certs.ts';
import { type ForwardProxy, startForwardProxy } from './fixtures/forward-proxy.ts';
import { addUpstream, type ListeningApp, listeningApp } from './helpers/forward.ts';
import {
  launchProxiedBrowser,
  type ProxiedBrowser,
  type Site,
  startSite,
} from './helpers/forward-browser.ts';

/**
 * Headless Chromium sends proxy credentials only after a 407. With auth off Rota never asks, so a
 * browser's username (and the session and country it carries) never arrives; ROTA_PROXY_CHALLENGE=true
 * makes the HTTP listener ask. Two Rotas, challenge off and on, the same browser and credentials.
 */

let site: Site;
let browser: ProxiedBrowser;
let upstreams: ForwardProxy[];
let plain: ListeningApp;
let challenging: ListeningApp;

async function rotaWith(env: Record<string, string>): Promise<ListeningApp> {
  const t = await listeningApp(env);
  for (const p of upstreams) await addUpstream(t, { url: `http://127.0.0.1:${p.port}` });
  return t;
}

const sessions = async (t: ListeningApp) =>
  (
    (await t.app.inject({ url: '/api/v1/sessions' })).json().data as {
      items: { id: string; requests: number }[];
    }
  ).items;

before(async () => {
  const tls = await testTls();
  site = await startSite(tls);
  upstreams = await Promise.all(['127.0.0.61', '127.0.0.62'].map((egress) => startForwardProxy({ egress })));
  browser = await launchProxiedBrowser();
  plain = await rotaWith({});
  challenging = await rotaWith({ ROTA_PROXY_CHALLENGE: 'true' });
});

after(async () => {
  await browser?.close();
  await Promise.all([plain?.close(), challenging?.close()]);
  await Promise.all([site?.close(), ...(upstreams ?? []).map((u) => u.close())]);
});

describe('Chromium and ROTA_PROXY_CHALLENGE', () => {
  it('without it Chromium never sends its username; with it the page loads on the session it names', async () => {
    const creds = { username: 'chrome-session-browsy', password: 'anything' };
    const off = await browser.visit(
      { server: `http://127.0.0.1:${plain.httpPort}`, ...creds },
      `${site.origin}/`,
    );
    assert.equal(off.result, site.token, off.problems.join('\n'));
    assert.deepEqual(await sessions(plain), [], 'no 407, so no username, so no session');

    const on = await browser.visit(
      { server: `http://127.0.0.1:${challenging.httpPort}`, ...creds },
      `${site.origin}/`,
    );
    assert.equal(on.status, 200, on.problems.join('\n'));
    assert.equal(on.result, site.token, on.problems.join('\n'));
    const pinned = await sessions(challenging);
    assert.equal(pinned.length, 1);
    assert.equal(pinned[0]?.id, 'browsy');
    assert.ok((pinned[0]?.requests ?? 0) >= 1);
  });
});
