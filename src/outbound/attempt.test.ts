import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BreakerRegistry } from '../breaker/registry.ts';
import { loadConfig } from '../config.ts';
import { RuntimeSettings } from '../control/settings.ts';
import { Pool } from '../pool/pool.ts';
import { MemoryStore } from '../store/memory.ts';
import { classifyProxyDialError, classifySendError } from '../upstream/classify.ts';
import { UpstreamError } from '../upstream/types.ts';
import { runAttempt } from './attempt.ts';
import { Selector } from './selector.ts';
import type { Work } from './work.ts';

/*
 * Whom an attempt's failure is held against (attempt.ts blameOf): only a proxy fault reaches the
 * breaker and health; a refusal of one target cools the pair; Rota's own failures blame nobody.
 */

async function setup() {
  const config = loadConfig({});
  const store = new MemoryStore();
  const pool = new Pool(store, () => 0);
  const settings = new RuntimeSettings(config, store);
  const breakers = new BreakerRegistry({ settings: config.breaker, now: () => 0 });
  const selector = new Selector(pool, breakers, settings, { random: Math.random, now: () => 0 });
  const entry = await pool.add({ url: 'http://10.0.0.1:8080' });
  return { selector, entry };
}

function failingWork(err: unknown): Work<never> {
  return {
    method: 'GET',
    replay: 'by-method',
    run: () => Promise.reject(err),
    answer: () => null,
    discard: () => {},
  };
}

async function attempt(err: unknown) {
  const { selector, entry } = await setup();
  const released: string[] = [];
  const refused: string[] = [];
  const settled = await runAttempt(
    {
      selector,
      monotonic: () => 0,
      refusals: { refused: (id, host, port) => refused.push(`${id} ${host}:${port}`) },
    },
    {
      entry,
      record: entry.record,
      banKey: entry.record.id,
      permit: { trial: false, release: (r) => released.push(r) },
      n: 1,
      work: failingWork(err),
      host: 'example.com',
      port: 8443,
      deadline: 1_000,
      retryStatusCodes: [],
      attempts: [],
    },
  );
  return { settled, released, refused, entry };
}

describe('blame of an attempt', () => {
  it('an error that is not an UpstreamError (a credential that fails to decrypt) blames nobody', async () => {
    const r = await attempt(new Error('Unsupported state or unable to authenticate data'));
    assert.equal(r.settled.result.type === 'error' && r.settled.result.error.kind, 'local');
    assert.deepEqual(r.released, ['neutral']);
    assert.equal(r.entry.stats.failed, 0);
    assert.equal(r.entry.consecutiveFailures, 0);
    assert.deepEqual(r.refused, []);
  });

  for (const code of ['EMFILE', 'ENFILE', 'ENOBUFS', 'ENOMEM']) {
    it(`${code} while dialling or sending is local: no breaker failure, no health change`, async () => {
      const cause = Object.assign(new Error(`connect ${code}`), { code });
      for (const err of [classifyProxyDialError(cause, 'tcp'), classifySendError(cause, 'queued')]) {
        assert.equal(err.kind, 'local');
        assert.equal(err.proxyFault, false);
        const r = await attempt(err);
        assert.deepEqual(r.released, ['neutral']);
        assert.equal(r.entry.stats.failed, 0);
        assert.equal(r.entry.health, 'unknown');
      }
    });
  }

  it('a refusal of the target cools the pair (host:port) and leaves breaker and health alone', async () => {
    const err = new UpstreamError('target_refused', 'the proxy refused the target (403 on CONNECT)', {
      mayHaveReachedTarget: false,
    });
    const r = await attempt(err);
    assert.deepEqual(r.released, ['neutral']);
    assert.deepEqual(r.refused, [`${r.entry.record.id} example.com:8443`]);
    assert.equal(r.entry.stats.failed, 0);
    assert.equal(r.entry.health, 'unknown');
  });

  it('a proxy fault still counts against the proxy', async () => {
    const r = await attempt(
      classifyProxyDialError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }), 'tcp'),
    );
    assert.deepEqual(r.released, ['failure']);
    assert.equal(r.entry.stats.failed, 1);
    assert.deepEqual(r.refused, []);
  });
});
