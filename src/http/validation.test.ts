import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { json, makeApp, type TestApp } from '../../test/helpers/app.ts';

describe('validation detail items', () => {
  let t: TestApp;
  before(async () => {
    t = await makeApp();
  });
  after(async () => t.close());

  it('reports one item per failing field: a nullable field is not also told "should be null"', async () => {
    const res = await t.app.inject({
      method: 'PUT',
      url: '/api/v1/retry/policy',
      ...json({ timeout: 0, retry_status_codes: [503, 503] }),
    });
    assert.equal(res.statusCode, 400);
    const detail = res.json().detail as { loc: string[]; type: string; msg: string }[];
    assert.deepEqual(detail.map((d) => `${d.loc.join('.')}:${d.type}`).sort(), [
      'body.retry_status_codes:value_error',
      'body.timeout:greater_than',
    ]);
    assert.match(detail.find((d) => d.loc[1] === 'retry_status_codes')!.msg, /unique/);
  });

  it('names the most specific code for POST request fields', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ url: 5 }, 'INVALID_URL'],
      [{ url: 'http://example.com', method: 'FETCH' }, 'INVALID_METHOD'],
      [{ url: 'http://example.com', timeout: 301 }, 'INVALID_TIMEOUT'],
      [{ url: 'http://example.com', extra: 1 }, 'VALIDATION_ERROR'],
    ];
    for (const [body, code] of cases) {
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/request', ...json(body) });
      assert.equal(res.statusCode, 422, JSON.stringify(body));
      assert.equal(res.json().error.code, code, JSON.stringify(body));
    }
  });
});
