import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { compileAllSchemas } from '../src/http/lazy-schemas.ts';
import { makeApp, type TestApp } from './helpers/app.ts';

// Validators and serializers are compiled on each route's first use (src/http/lazy-schemas.ts). This
// compiles every one the full app registers, so that a schema mistake fails here and not on the first
// request of a route in production.
describe('route schemas', () => {
  let t: TestApp;
  before(async () => {
    t = await makeApp();
  });
  after(async () => t.close());

  it('every validator and serializer of every route compiles', async () => {
    const n = compileAllSchemas(t.app);
    // ~60 routes, each with a body/query/params validator or several response serializers.
    assert.ok(n > 100, `${n} compilers`);
  });

  it('a lazily compiled validator still refuses bad input with the contract envelope', async () => {
    const r = await t.app.inject({ method: 'POST', url: '/api/v1/proxies', payload: { url: 5 } });
    assert.equal(r.statusCode, 400);
    const body = r.json() as { error: { code: string }; detail: { loc: string[]; type: string }[] };
    assert.equal(body.error.code, 'INVALID_PROXY_FORMAT');
    assert.deepEqual(body.detail[0]?.loc, ['body', 'url']);
    assert.equal(body.detail[0]?.type, 'string_type');
  });
});
