import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Api, injectTransport, type Reply } from './helpers/api-contract.ts';
import { makeApp, type TestApp } from './helpers/app.ts';

/** Invalid updates: every problem listed, 400 INVALID_CONFIGURATION, nothing half-applied. */

interface Detail {
  loc: (string | number)[];
  msg: string;
  type: string;
  input: unknown;
}
interface ErrorBody {
  error: { code: string; details: Detail[] };
  detail: Detail[];
}

let t: TestApp;
let api: Api;
before(async () => {
  t = await makeApp();
  api = await Api.over(injectTransport(t.app));
});
after(() => t.close());

/** Distinct locations: a nullable field may be reported once per branch of its union. */
const locs = (r: Reply) => [...new Set((r.json as ErrorBody).detail.map((d) => d.loc.join('.')))].sort();

/** The PUT is refused with every expected location, and GET afterwards equals GET before. */
async function refused(path: '/config' | '/retry/policy', body: unknown, expected: string[]): Promise<Reply> {
  const before = await api.data('GET', path);
  const r = await api.call('PUT', path, { body });
  assert.equal(r.status, 400, r.text);
  const b = r.json as ErrorBody;
  assert.equal(b.error.code, 'INVALID_CONFIGURATION');
  assert.deepEqual(b.error.details, b.detail, 'details and detail carry the same items');
  assert.deepEqual(locs(r), [...expected].sort());
  for (const d of b.detail) assert.ok(d.msg.length > 0 && d.type.length > 0, JSON.stringify(d));
  assert.deepEqual(await api.data('GET', path), before, 'nothing was applied');
  return r;
}

describe('PUT config refuses invalid values', () => {
  it('lists every problem of a body with several bad fields, and changes nothing', async () => {
    const r = await refused(
      '/config',
      {
        rotation_strategy: 'fastest',
        timeout: 0,
        max_retries: 11,
        rate_limits: { default_limit: 0, request_endpoint_limit: 'x', burst: 5 },
        cors_origins: ['http://ok.example', 'ftp://files.example/x', '*', 7],
      },
      [
        'body.rotation_strategy',
        'body.timeout',
        'body.max_retries',
        'body.rate_limits.default_limit',
        'body.rate_limits.request_endpoint_limit',
        'body.rate_limits.burst',
        'body.cors_origins.1',
        'body.cors_origins.2',
        'body.cors_origins.3',
      ],
    );
    const byLoc = new Map((r.json as ErrorBody).detail.map((d) => [d.loc.join('.'), d]));
    assert.equal(byLoc.get('body.rotation_strategy')?.input, 'fastest');
    assert.equal(byLoc.get('body.rate_limits.burst')?.type, 'extra_forbidden');
    assert.match(byLoc.get('body.cors_origins.2')?.msg ?? '', /credentials/);
    const status = (await api.call('GET', '/status')).json as { config_source: string };
    assert.equal(status.config_source, 'environment');
  });

  it('refuses auth_enabled: it is read-only', async () => {
    for (const value of [true, false]) {
      const r = await refused('/config', { auth_enabled: value, timeout: 10 }, ['body.auth_enabled']);
      assert.equal((r.json as ErrorBody).detail[0]?.type, 'extra_forbidden');
    }
    assert.equal((await api.data<{ auth_enabled: boolean }>('GET', '/config')).auth_enabled, false);
  });

  it('refuses wrong types, fractions and strategies the old config endpoint knew only in the library', async () => {
    await refused('/config', { timeout: '30' }, ['body.timeout']);
    await refused('/config', { timeout: 1.5, max_retries: 0 }, ['body.timeout', 'body.max_retries']);
    await refused('/config', { timeout: 301 }, ['body.timeout']);
    await refused('/config', { rotation_strategy: 'ROUND-ROBIN' }, ['body.rotation_strategy']);
    await refused('/config', { rate_limits: null }, ['body.rate_limits']);
    await refused('/config', { cors_origins: 'http://a.example' }, ['body.cors_origins']);
    await refused('/config', { cors_origins: ['http://a.example/path'] }, ['body.cors_origins.0']);
    await refused('/config', [], ['body']);
    await refused('/config', null, ['body']);
  });

  it('accepts an empty update and a partial one, keeping the other fields', async () => {
    const before = await api.data<Record<string, unknown>>('GET', '/config');
    assert.deepEqual(await api.data('PUT', '/config', { body: {} }), before);
    const after = await api.data<Record<string, unknown>>('PUT', '/config', { body: { timeout: 42 } });
    assert.deepEqual(after, { ...before, timeout: 42 });
  });
});

describe('retry policy', () => {
  it('GET has the documented record and defaults', async () => {
    assert.deepEqual(await api.data('GET', '/retry/policy'), {
      max_attempts: 3,
      backoff_strategy: 'exponential',
      base_delay: 1,
      multiplier: 2,
      max_backoff_delay: 30,
      jitter: true,
      retry_status_codes: [502, 503, 504],
      timeout: null,
      retry_non_idempotent: false,
    });
  });

  it('PUT is partial; an explicit null resets timeout', async () => {
    const before = await api.data<Record<string, unknown>>('GET', '/retry/policy');
    const a = await api.data('PUT', '/retry/policy', { body: { backoff_strategy: 'linear', timeout: 12.5 } });
    assert.deepEqual(a, { ...before, backoff_strategy: 'linear', timeout: 12.5 });
    const b = await api.data('PUT', '/retry/policy', {
      body: { jitter: false, retry_status_codes: [429, 503] },
    });
    assert.deepEqual(b, {
      ...before,
      backoff_strategy: 'linear',
      timeout: 12.5,
      jitter: false,
      retry_status_codes: [429, 503],
    });
    const c = await api.data('PUT', '/retry/policy', { body: { timeout: null } });
    assert.deepEqual(c, {
      ...before,
      backoff_strategy: 'linear',
      jitter: false,
      retry_status_codes: [429, 503],
    });
    assert.deepEqual(await api.data('GET', '/retry/policy'), c);
  });

  it('max_attempts and config max_retries are one value', async () => {
    await api.data('PUT', '/retry/policy', { body: { max_attempts: 7 } });
    assert.equal((await api.data<{ max_retries: number }>('GET', '/config')).max_retries, 7);
    await api.data('PUT', '/config', { body: { max_retries: 4 } });
    assert.equal((await api.data<{ max_attempts: number }>('GET', '/retry/policy')).max_attempts, 4);
  });

  it('refuses each bad value with 400 INVALID_CONFIGURATION, never a 500', async () => {
    const cases: [Record<string, unknown>, string[]][] = [
      [{ max_attempts: 0 }, ['body.max_attempts']],
      [{ max_attempts: 11 }, ['body.max_attempts']],
      [{ max_attempts: 2.5 }, ['body.max_attempts']],
      [{ max_attempts: '3' }, ['body.max_attempts']],
      [{ max_attempts: null }, ['body.max_attempts']],
      [{ backoff_strategy: 'quadratic' }, ['body.backoff_strategy']],
      [{ base_delay: -1 }, ['body.base_delay']],
      [{ base_delay: 61 }, ['body.base_delay']],
      [{ multiplier: 0.5 }, ['body.multiplier']],
      [{ multiplier: 11 }, ['body.multiplier']],
      [{ max_backoff_delay: 301 }, ['body.max_backoff_delay']],
      [{ retry_status_codes: [399] }, ['body.retry_status_codes.0']],
      [{ retry_status_codes: [503, 600] }, ['body.retry_status_codes.1']],
      [{ retry_status_codes: [503, 503] }, ['body.retry_status_codes']],
      [{ retry_status_codes: '503' }, ['body.retry_status_codes']],
      [{ timeout: 0 }, ['body.timeout']],
      [{ timeout: 301 }, ['body.timeout']],
      [{ jitter: 'yes' }, ['body.jitter']],
      [{ retry_non_idempotent: 1 }, ['body.retry_non_idempotent']],
      [{ retries: 3 }, ['body.retries']],
      [{ base_delay: 20, max_backoff_delay: 10 }, ['body.max_backoff_delay']],
      [{ base_delay: 50 }, ['body.max_backoff_delay']],
      // Several at once: the schema's findings and the cross-field rule together.
      [
        { jitter: 'no', multiplier: 0, base_delay: 9, max_backoff_delay: 3 },
        ['body.jitter', 'body.multiplier', 'body.max_backoff_delay'],
      ],
    ];
    for (const [body, expected] of cases) await refused('/retry/policy', body, expected);
  });
});
