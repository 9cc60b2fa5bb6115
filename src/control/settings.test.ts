import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../config.ts';
import { MemoryStore } from '../store/memory.ts';
import { RuntimeSettings } from './settings.ts';

/** A store that fails its next write when told to: a disk that fills up mid-update. */
class FlakyStore extends MemoryStore {
  failNext = false;
  override async putSetting(key: string, value: unknown): Promise<void> {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('disk full');
    }
    await super.putSetting(key, value);
  }
}

async function settingsOver(store: MemoryStore, env: Record<string, string> = {}): Promise<RuntimeSettings> {
  const s = new RuntimeSettings(loadConfig(env), store);
  await s.load();
  return s;
}

describe('RuntimeSettings', () => {
  it('starts from the environment', async () => {
    const s = await settingsOver(new MemoryStore(), {
      ROTA_STRATEGY: 'weighted',
      ROTA_TIMEOUT: '12',
      ROTA_RATE_LIMIT: '7/second',
      ROTA_RATE_LIMIT_REQUEST: '3/minute',
      ROTA_CORS_ORIGINS: 'http://a.example, http://b.example',
    });
    assert.deepEqual(s.get(), {
      rotation_strategy: 'weighted',
      timeout: 12,
      rate_limits: { default_limit: 7, request_endpoint_limit: 3 },
      cors_origins: ['http://a.example', 'http://b.example'],
    });
    assert.deepEqual(s.defaultRate(), { limit: 7, windowMs: 1000 });
    assert.equal(s.source, 'environment');
  });

  it('merges partial updates, nested rate limits included, and replaces the object whole', async () => {
    const s = await settingsOver(new MemoryStore());
    const before = s.get();
    await s.update({ rate_limits: { request_endpoint_limit: 9 } });
    await s.update({ timeout: 5 });
    assert.notEqual(s.get(), before, 'a new object');
    assert.ok(Object.isFrozen(s.get()));
    assert.deepEqual(s.get(), {
      ...before,
      timeout: 5,
      rate_limits: { default_limit: before.rate_limits.default_limit, request_endpoint_limit: 9 },
    });
  });

  it('stores only what was changed: other fields follow the environment after a restart', async () => {
    const store = new MemoryStore();
    const first = await settingsOver(store, { ROTA_TIMEOUT: '30', ROTA_STRATEGY: 'random' });
    await first.update({ timeout: 8, rate_limits: { default_limit: 77 } });
    assert.deepEqual(await store.getSetting('runtime_settings'), {
      timeout: 8,
      rate_limits: { default_limit: 77 },
    });
    // Restart with a different environment: the override wins, the rest comes from the new environment.
    const second = await settingsOver(store, { ROTA_TIMEOUT: '60', ROTA_STRATEGY: 'least-used' });
    assert.equal(second.get().timeout, 8);
    assert.equal(second.get().rotation_strategy, 'least-used');
    assert.equal(second.get().rate_limits.default_limit, 77);
    assert.equal(second.source, 'storage');
  });

  it('ignores stored values that are no longer valid instead of failing to start', async () => {
    const store = new MemoryStore();
    await store.putSetting('runtime_settings', {
      rotation_strategy: 'fastest',
      timeout: 9000,
      cors_origins: ['http://ok.example', 5],
      rate_limits: { default_limit: 0, request_endpoint_limit: 12 },
      unknown: true,
    });
    const s = await settingsOver(store);
    const env = await settingsOver(new MemoryStore());
    assert.deepEqual(s.get(), {
      ...env.get(),
      rate_limits: { ...env.get().rate_limits, request_endpoint_limit: 12 },
    });
  });

  it('a full record stored by an earlier version still loads', async () => {
    const store = new MemoryStore();
    const full = {
      rotation_strategy: 'geo-targeted',
      timeout: 44,
      rate_limits: { default_limit: 5, request_endpoint_limit: 6 },
      cors_origins: ['http://x.example'],
    };
    await store.putSetting('runtime_settings', full);
    assert.deepEqual((await settingsOver(store)).get(), full);
  });

  it('a failed write changes nothing; restore puts an earlier state back', async () => {
    const store = new FlakyStore();
    const s = await settingsOver(store);
    const start = s.state();
    store.failNext = true;
    await assert.rejects(s.update({ timeout: 3 }), /disk full/);
    assert.equal(s.get(), start.current);
    await s.update({ timeout: 3, cors_origins: ['http://c.example'] });
    await s.restore(start);
    assert.equal(s.get(), start.current);
    assert.deepEqual(await store.getSetting('runtime_settings'), {});
  });
});
