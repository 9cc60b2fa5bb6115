import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { STRATEGIES } from '../src/config.ts';
import { Api, injectTransport, type Reply } from './helpers/api-contract.ts';
import { makeApp, type TestApp } from './helpers/app.ts';

/**
 * PUT config and PUT retry/policy under random bodies: never a 500; a 200 applies exactly the body,
 * anything else (400/415/422) applies nothing. Every JSON answer matches the OpenAPI document.
 */

type Json = Record<string, unknown>;

let t: TestApp;
let api: Api;
before(async () => {
  t = await makeApp();
  api = await Api.over(injectTransport(t.app));
});
after(() => t.close());

const junk = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.string({ maxLength: 8 }),
  fc.double({ noNaN: true }),
  fc.integer({ min: -1000, max: 1000 }),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 }),
);
const origin = fc.constantFrom(
  'http://a.example',
  'https://b.example:8443',
  'http://[::1]:3000',
  'http://127.0.0.1',
);

/** Values each field must refuse, next to the generic junk. */
const bad = fc.oneof(
  junk,
  fc.constantFrom('fastest', 0, -1, 0.5, 11, 301, 1_000_001, '*', 'ftp://x', 'http://a.example/', ''),
  fc.constant(['*']),
  fc.constant([399, 600]),
  fc.constant([503, 503]),
);

/**
 * Bodies of valid fields (each present or not), and in about half of them one field replaced by a bad
 * value or a forbidden key added, so that both outcomes are exercised often.
 */
function bodies(valid: fc.Arbitrary<Record<string, unknown>>, keys: string[]) {
  const spoil = fc.option(fc.tuple(fc.constantFrom(...keys, 'auth_enabled', 'extra'), bad), { freq: 2 });
  return fc.tuple(valid, spoil).map(([body, s]) => (s ? { ...body, [s[0]]: s[1] } : body));
}

const configBody = bodies(
  fc.record(
    {
      rotation_strategy: fc.constantFrom(...STRATEGIES),
      timeout: fc.integer({ min: 1, max: 300 }),
      max_retries: fc.integer({ min: 1, max: 10 }),
      // Valid limits stay high: a tiny default limit would rate-limit the checks that follow.
      rate_limits: fc.record(
        {
          default_limit: fc.integer({ min: 10_000, max: 1_000_000 }),
          request_endpoint_limit: fc.integer({ min: 1, max: 1_000_000 }),
        },
        { requiredKeys: [] },
      ),
      cors_origins: fc.uniqueArray(origin, { maxLength: 4 }),
    },
    { requiredKeys: [] },
  ),
  ['rotation_strategy', 'timeout', 'max_retries', 'rate_limits', 'cors_origins'],
);

const policyBody = bodies(
  fc.record(
    {
      max_attempts: fc.integer({ min: 1, max: 10 }),
      backoff_strategy: fc.constantFrom('exponential', 'linear', 'fixed'),
      base_delay: fc.double({ min: 0, max: 60, noNaN: true }),
      multiplier: fc.double({ min: 1, max: 10, noNaN: true }),
      max_backoff_delay: fc.double({ min: 0, max: 300, noNaN: true }),
      jitter: fc.boolean(),
      retry_status_codes: fc.uniqueArray(fc.integer({ min: 400, max: 599 }), { maxLength: 5 }),
      timeout: fc.option(fc.double({ min: 0.001, max: 300, noNaN: true })),
      retry_non_idempotent: fc.boolean(),
    },
    { requiredKeys: [] },
  ),
  [
    'max_attempts',
    'backoff_strategy',
    'base_delay',
    'multiplier',
    'max_backoff_delay',
    'jitter',
    'retry_status_codes',
    'timeout',
    'retry_non_idempotent',
  ],
);

/** The view a successful PUT config must produce from `prev` (auth_enabled is never accepted). */
function expectedConfig(prev: Json, body: Json): Json {
  const next: Json = { ...prev, ...body };
  next.rate_limits = { ...(prev.rate_limits as Json), ...((body.rate_limits as Json | undefined) ?? {}) };
  return next;
}

function assertNotApplied(r: Reply): void {
  assert.ok([400, 415, 422].includes(r.status), `${r.status}: ${r.text.slice(0, 300)}`);
}

async function put(path: '/config' | '/retry/policy', body: unknown): Promise<number> {
  const prev = await api.data<Json>('GET', path);
  const r = await api.call('PUT', path, { body });
  assert.ok(r.json !== undefined, 'every answer is JSON');
  if (r.status === 200) {
    const data = (r.json as { data: Json }).data;
    if (path === '/config') assert.deepEqual(data, expectedConfig(prev, body as Json));
    else assert.deepEqual(data, { ...prev, ...(body as Json) });
    assert.deepEqual(await api.data('GET', path), data);
    return r.status;
  }
  assertNotApplied(r);
  if (r.status === 400)
    assert.equal((r.json as { error: { code: string } }).error.code, 'INVALID_CONFIGURATION');
  assert.deepEqual(await api.data('GET', path), prev, 'nothing half-applied');
  return r.status;
}

/** Both outcomes must have been exercised, or the property proved little. */
function assertBothOutcomes(statuses: number[]): void {
  const ok = statuses.filter((s) => s === 200).length;
  const refused = statuses.filter((s) => s === 400).length;
  assert.ok(ok >= 20 && refused >= 20, `200: ${ok}, 400: ${refused} of ${statuses.length}`);
}

describe('fuzzed updates', () => {
  it('PUT config: 200 applies exactly the body, 400 applies nothing', async () => {
    const statuses: number[] = [];
    await fc.assert(
      fc.asyncProperty(configBody, async (body) => {
        statuses.push(await put('/config', body));
      }),
      { numRuns: 250 },
    );
    assertBothOutcomes(statuses);
  });

  it('PUT retry/policy: 200 applies exactly the body, 400 applies nothing', async () => {
    const statuses: number[] = [];
    await fc.assert(
      fc.asyncProperty(policyBody, async (body) => {
        statuses.push(await put('/retry/policy', body));
      }),
      { numRuns: 250 },
    );
    assertBothOutcomes(statuses);
  });

  it('any JSON value or raw text as the body: never a 500', async () => {
    const raw = fc.oneof(fc.json({ maxDepth: 3 }), fc.string({ maxLength: 40 }));
    await fc.assert(
      fc.asyncProperty(raw, fc.constantFrom('/config', '/retry/policy'), async (payload, path) => {
        const before = await api.data('GET', path);
        const res = await t.app.inject({
          method: 'PUT',
          url: `/api/v1${path}`,
          headers: { 'content-type': 'application/json' },
          payload,
        });
        const r: Reply = { status: res.statusCode, headers: {}, text: res.body, json: res.json() };
        api.contract.check('PUT', `/api/v1${path}`, r.status, r.json);
        if (r.status !== 200) {
          assertNotApplied(r);
          assert.deepEqual(await api.data('GET', path), before);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('a body that is not JSON is 415 and applies nothing', async () => {
    const before = await api.data('GET', '/config');
    const res = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/config',
      headers: { 'content-type': 'text/plain' },
      payload: 'timeout=5',
    });
    assert.equal(res.statusCode, 415);
    api.contract.check('PUT', '/api/v1/config', 415, res.json());
    assert.deepEqual(await api.data('GET', '/config'), before);
  });
});
