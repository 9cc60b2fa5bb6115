import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Api, fetchTransport, injectTransport } from './helpers/api-contract.ts';
import { makeApp } from './helpers/app.ts';
import { type RunningServer, startServer } from './helpers/server.ts';

/** Runtime changes survive a restart when storage is SQLite (docs/decisions.md, "Storage"): real process. */

const dir = mkdtempSync(join(tmpdir(), 'rota-control-'));
const running = new Set<RunningServer>();
after(async () => {
  for (const s of running) await s.stop('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function start(env: Record<string, string>): Promise<{ server: RunningServer; api: Api }> {
  const server = await startServer(env);
  running.add(server);
  return { server, api: await Api.over(fetchTransport(server.url)) };
}

async function stop(server: RunningServer): Promise<void> {
  const info = await server.stop('SIGTERM');
  running.delete(server);
  assert.equal(info.code, 0, server.output());
}

async function configSource(api: Api): Promise<string> {
  const r = await api.call('GET', '/status');
  assert.equal(r.status, 200);
  return (r.json as { config_source: string }).config_source;
}

const CONFIG = {
  rotation_strategy: 'session-persistence',
  timeout: 17,
  max_retries: 6,
  rate_limits: { default_limit: 4321, request_endpoint_limit: 321 },
  cors_origins: ['https://console.example'],
};
const POLICY = { backoff_strategy: 'linear', base_delay: 0.25, timeout: 40, retry_status_codes: [429, 503] };

describe('configuration persistence', () => {
  it('PUT config and PUT retry/policy survive a restart; config_source then says storage', async () => {
    const env = { ROTA_STORAGE_PATH: join(dir, 'rota.db'), ROTA_TIMEOUT: '30', ROTA_STRATEGY: 'random' };
    let { server, api } = await start(env);
    assert.equal(await configSource(api), 'environment', 'nothing stored yet');
    const defaults = await api.data<Record<string, unknown>>('GET', '/retry/policy');

    const view = await api.data('PUT', '/config', { body: CONFIG });
    const policy = await api.data('PUT', '/retry/policy', { body: POLICY });
    const expectedView = { ...CONFIG, auth_enabled: false };
    const expectedPolicy = { ...defaults, ...POLICY, max_attempts: 6 };
    assert.deepEqual(view, expectedView);
    assert.deepEqual(policy, expectedPolicy);
    assert.equal(await configSource(api), 'storage');
    // A refused update must not reach storage either.
    assert.equal((await api.call('PUT', '/config', { body: { timeout: 0 } })).status, 400);
    await stop(server);

    ({ server, api } = await start(env));
    assert.equal(await configSource(api), 'storage');
    assert.deepEqual(await api.data('GET', '/config'), expectedView);
    assert.deepEqual(await api.data('GET', '/retry/policy'), expectedPolicy);
    const status = (await api.call('GET', '/status')).json as { rotation_strategy: string };
    assert.equal(status.rotation_strategy, 'session-persistence', 'the stored strategy is the one in use');
    // The stored CORS origin is live after the restart.
    const r = await fetch(`${server.url}/api/v1/stats`, { headers: { origin: 'https://console.example' } });
    await r.arrayBuffer();
    assert.equal(r.headers.get('access-control-allow-origin'), 'https://console.example');

    // An explicit null reset is persisted as well.
    await api.data('PUT', '/retry/policy', { body: { timeout: null } });
    await stop(server);
    ({ server, api } = await start(env));
    assert.deepEqual(await api.data('GET', '/retry/policy'), { ...expectedPolicy, timeout: null });
    await stop(server);
  });

  it('without storage, changes are live but config_source stays environment', async () => {
    const { server, api } = await start({});
    await api.data('PUT', '/config', { body: { timeout: 9 } });
    assert.equal((await api.data<{ timeout: number }>('GET', '/config')).timeout, 9);
    assert.equal(await configSource(api), 'environment');
    const status = (await api.call('GET', '/status')).json as { storage_backend: string };
    assert.equal(status.storage_backend, 'memory');
    await stop(server);
  });

  it('a stored retry policy alone makes config_source storage at once, not only after a restart', async () => {
    const t = await makeApp({ ROTA_STORAGE_PATH: join(dir, 'policy-only.db') });
    try {
      const api = await Api.over(injectTransport(t.app));
      assert.equal(await configSource(api), 'environment');
      await api.data('PUT', '/retry/policy', { body: { jitter: false } });
      assert.equal(await configSource(api), 'storage');
    } finally {
      await t.close();
    }
  });
});
