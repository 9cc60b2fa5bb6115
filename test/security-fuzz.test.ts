import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { InjectOptions } from 'fastify';
import { makeApp, type TestApp } from './helpers/app.ts';
import {
  API_KEY,
  AUTH_ENV,
  addProxyBody,
  assertNoSecret,
  listRoutes,
  PROXY_PASS,
  PROXY_USER,
  type RouteInfo,
  responseText,
  SECRETS,
} from './helpers/security.ts';

const BASIC = `Basic ${Buffer.from(`${PROXY_USER}:${PROXY_PASS}`).toString('base64')}`;
const CURRENT_ID = '<current proxy id>';
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'] as const;

const printable = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  maxLength: 60,
});
const text = fc.oneof(printable, fc.string({ maxLength: 60 }), fc.constant('9'.repeat(400)));
const scalar = fc.oneof(
  text,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.bigInt().map(String),
);

/** Where a credential legitimately sits in a request: each must stay out of every answer and log line. */
const auth = fc.oneof(
  { weight: 4, arbitrary: fc.constant({ 'x-api-key': API_KEY }) },
  { weight: 2, arbitrary: fc.constant({ authorization: `Bearer ${API_KEY}` }) },
  { weight: 1, arbitrary: fc.constant({}) },
  {
    weight: 1,
    arbitrary: fc.record({
      'x-api-key': fc.constantFrom(`${API_KEY}x`, 'wrong', ''),
      authorization: fc.constantFrom(BASIC, `Bearer ${PROXY_PASS}`, 'Bearer'),
    }),
  },
);
const contentType = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ 'content-type': 'application/json' }) },
  { weight: 1, arbitrary: fc.constant({}) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(
        'application/json; charset=utf-8',
        'text/plain',
        'application/x-www-form-urlencoded',
        'x/y',
      )
      .map((v) => ({ 'content-type': v })),
  },
);
const secretHeaders = fc
  .tuple(
    auth,
    contentType,
    fc.record(
      {
        cookie: fc.constant(`session=${API_KEY}; pw=${PROXY_PASS}`),
        'proxy-authorization': fc.constant(BASIC),
        'x-forwarded-for': printable,
        'x-request-id': printable,
      },
      { requiredKeys: [] },
    ),
  )
  .map(([a, c, rest]) => ({ ...rest, ...c, ...a }));
const otherHeaders = fc.dictionary(fc.stringMatching(/^x-[a-z0-9-]{1,20}$/), printable, { maxKeys: 5 });

const proxyUrl = fc.constantFrom(
  `http://${PROXY_USER}:${PROXY_PASS}@127.0.0.1:9`,
  `socks5://${PROXY_USER}:${PROXY_PASS}@127.0.0.1:9/x`,
  `${PROXY_USER}:${PROXY_PASS}@127.0.0.1:9`,
  `http://${PROXY_USER}:${PROXY_PASS}@[::1:9`,
  `ftp://${PROXY_USER}:${PROXY_PASS}@127.0.0.1:9`,
  `http://${PROXY_USER}:${PROXY_PASS}@203.0.113.7/`,
  'http://127.0.0.1:9',
  'file:///etc/passwd',
);
const secretBody = fc.record(
  {
    url: fc.oneof(proxyUrl, text),
    username: fc.oneof(fc.constant(PROXY_USER), scalar),
    password: fc.oneof(fc.constant(PROXY_PASS), scalar),
    headers: fc.oneof(
      fc.constant({ Authorization: `Bearer ${API_KEY}`, Cookie: PROXY_PASS, 'Proxy-Authorization': BASIC }),
      fc.dictionary(printable, scalar, { maxKeys: 3 }),
    ),
    method: fc.oneof(fc.constantFrom(...METHODS), text),
    timeout: scalar,
    proxy_ids: fc.oneof(fc.array(fc.oneof(text, fc.constant(CURRENT_ID)), { maxLength: 5 }), scalar),
    rate_limits: fc.oneof(fc.record({ default_limit: scalar, request_endpoint_limit: scalar }), scalar),
    api_key: fc.constant(API_KEY),
    token: fc.constant(API_KEY),
  },
  { requiredKeys: [] },
);
const body = fc.oneof(
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 4, arbitrary: secretBody.map((b) => JSON.stringify(b)) },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
);
const query = fc.dictionary(
  fc.oneof(
    fc.constantFrom('page', 'page_size', 'status_filter', 'hours', 'format', 'session_id', 'country'),
    printable,
  ),
  fc.oneof(scalar.map(String), fc.constantFrom('prometheus', 'json', 'healthy', '720', '0')),
  { maxKeys: 4 },
);

function pathOf(route: RouteInfo, param: string): string {
  if (route.path === '/docs/static/:file') return `/docs/static/${encodeURIComponent(param)}`;
  return route.path.replace(/:proxy_id/g, encodeURIComponent(param).slice(0, 180));
}

describe('fuzz: every route with random bodies, headers and query strings', () => {
  let t: TestApp;
  let routes: RouteInfo[];
  let proxyId: string;
  let restore: () => Promise<void>;
  before(async () => {
    t = await makeApp({ ...AUTH_ENV, ROTA_CONNECT_TIMEOUT_S: '0.5', ROTA_TIMEOUT: '2' });
    routes = listRoutes(t.app).filter((r) => r.path !== '*');
    const settings = { ...t.services.settings.get() };
    const policy = { ...t.services.retry.get() };
    // Fuzzed PUTs may set tiny limits; each run starts from the original settings and pool.
    restore = async () => {
      await t.services.settings.update(settings);
      await t.services.retry.update(policy);
      if (!t.services.pool.get(proxyId)) proxyId = (await t.services.pool.add(addProxyBody())).record.id;
    };
    proxyId = (await t.services.pool.add(addProxyBody())).record.id;
  });
  after(() => t.close());

  it('never answers 500 and never gives back a credential', async () => {
    // Writes are where credentials arrive: each write route is drawn four times as often.
    const weighted = routes.flatMap((r) =>
      r.methods
        .map((m) => ({ path: r.path, methods: [m] }))
        .flatMap((x) => (x.methods[0] === 'GET' ? [x] : [x, x, x, x])),
    );
    const route = fc.nat(weighted.length - 1).map((i) => weighted[i]!);
    const param = fc.oneof(fc.constant(CURRENT_ID), fc.uuid(), text);
    const method = fc.option(fc.constantFrom(...METHODS), { freq: 4 });
    let served = 0;
    await fc.assert(
      fc.asyncProperty(
        route,
        method,
        param,
        query,
        secretHeaders,
        otherHeaders,
        body,
        async (r, m, p, q, sh, oh, b) => {
          const id = p === CURRENT_ID ? proxyId : p;
          const req: InjectOptions = {
            method: m ?? (r.methods[0] as 'GET'),
            url: pathOf(r, id),
            query: q,
            headers: { ...oh, ...sh },
            remoteAddress: '192.0.2.1',
            ...(b === undefined ? {} : { payload: b.replaceAll(CURRENT_ID, proxyId) }),
          };
          const res = await t.app.inject(req);
          assert.notEqual(res.statusCode, 500, `${req.method} ${req.url}: ${res.body.slice(0, 300)}`);
          assertNoSecret(responseText(res), `${req.method} ${req.url}`);
          if (res.statusCode < 400) served++;
          await restore();
        },
      ),
      { numRuns: 600 },
    );
    assert.ok(served > 50, `only ${served} requests got past validation: the fuzz is not reaching handlers`);
    assertNoSecret(t.logs.join('\n'), 'logs', SECRETS);
    assert.equal(t.logs.filter((l) => l.includes('unhandled error')).length, 0);
  });
});
