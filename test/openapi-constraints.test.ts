import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { parseProxyUrl } from '../src/pool/proxy-url.ts';
import { TARGET_URL_PATTERN } from '../src/schemas/patterns.ts';
import { json, makeApp, type TestApp } from './helpers/app.ts';
import { API, type Document } from './helpers/openapi-doc.ts';

/**
 * The constraints the OpenAPI document states are the ones the server enforces, no looser and no
 * stricter, so that a client generated from it or a fuzzer driven by it never sends a "valid" request the
 * server refuses (test/api-fuzz.test.ts runs schemathesis on the same grounds). Each pattern is held
 * against the code that decides: the proxy URL parser, the WHATWG URL parser and the SSRF rules' scheme and
 * credential checks, the CORS origin check of PUT config, the header and base64 checks of POST request,
 * the blank-pattern check of PUT ban-policy.
 */

type Validate = (value: unknown) => boolean;

function validator(schema: unknown): Validate {
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  const v = ajv.compile(schema as object);
  return (value) => v(value) === true;
}

interface Schema {
  properties: Record<string, Schema>;
  items: Schema;
  pattern?: string;
}

function bodySchema(doc: Document, method: string, path: string): Schema {
  const schema = doc.paths[path]?.[method]?.requestBody?.content?.['application/json']?.schema;
  assert.ok(schema, `${method} ${path} documents a JSON body`);
  return schema as Schema;
}

/** A host name of exactly `n` characters, labels of at most 50. */
function nameOfLength(n: number): string {
  const labels: string[] = [];
  let left = n;
  while (left > 51) {
    labels.push('a'.repeat(50));
    left -= 51;
  }
  labels.push('b'.repeat(Math.max(left, 1)));
  return labels.join('.');
}

const space = fc.constantFrom('', '', '', ' ', '\t', '\n', '\u00a0', '\ufeff', '\u2028', '\u001c', '\u0085');
const scheme = fc.constantFrom(
  'http',
  'HTTP',
  'https',
  'hTTpS',
  'socks4',
  'SOCKS4A',
  'socks5',
  'socks5h',
  'Socks5H',
  'ftp',
  'socks',
  'socks4h',
  'http+x',
  '',
);
const percent = fc.constantFrom(
  '%41',
  '%7f',
  '%00',
  '%C3%A9',
  '%c3',
  '%E2%82%AC',
  '%ED%A0%80',
  '%ED%9F%BF',
  '%F0%9F%98%80',
  '%F4%8F%BF%BF',
  '%F4%90%80%80',
  '%C0%80',
  '%C2%80',
  '%E0%80%80',
  '%E0%A0%80',
  '%F0%80%80%80',
  '%zz',
  '%',
  '%4',
  '%FF',
);
const infoChar = fc.oneof(
  fc.constantFrom(
    'a',
    'Z',
    '9',
    ':',
    ':',
    ' ',
    '[',
    ']',
    '!',
    '~',
    'é',
    '😀',
    '\u0000',
    '@',
    '/',
    '?',
    '#',
    '\\',
  ),
  percent,
);
const userinfo = fc.oneof(
  fc.constant(''),
  fc.array(infoChar, { maxLength: 6 }).map((chars) => `${chars.join('')}@`),
);
const octet = fc.oneof(
  fc.integer({ min: 0, max: 300 }).map(String),
  fc.constantFrom('00', '01', '010', '1a', ''),
);
const ipv4 = fc
  .tuple(octet, octet, octet, octet, fc.constantFrom('', '', '.', '..'))
  .map(([a, b, c, d, dot]) => `${a}.${b}.${c}.${d}${dot}`);
const h16 = fc.stringMatching(/^[0-9a-fA-F]{1,5}$/);
const ipv6 = fc
  .oneof(
    fc.constantFrom(
      '::',
      '::1',
      '1::',
      'fe80::1%eth0',
      'fe80::1%25eth0',
      'fe80::1%',
      'fe80::1%e/0',
      '::ffff:1.2.3.4',
      '::1.2.3.04',
      '1:2:3:4:5:6:7:8',
      '1:2:3:4:5:6:7::',
      '1:2:3:4:5:6:1.2.3.4',
      '1:2:3:4:5:6:7:1.2.3.4',
      '1::2::3',
      ':1::2',
      '1:2:3:4:5:6:7:8:9',
      'g::1',
      'FE80::A',
    ),
    fc.array(h16, { minLength: 1, maxLength: 9 }).map((groups) => groups.join(':')),
    fc
      .tuple(fc.array(h16, { maxLength: 5 }), fc.array(h16, { maxLength: 5 }))
      .map(([a, b]) => `${a.join(':')}::${b.join(':')}`),
  )
  .map((address) => `[${address}]`);
const label = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9-]{1,8}$/),
  fc.constantFrom('a'.repeat(63), 'a'.repeat(64), '-a', 'a-', 'a--b', 'é', '\u212a', 'a_b', '1', '0', ''),
);
const hostName = fc
  .tuple(fc.array(label, { minLength: 1, maxLength: 5 }), fc.constantFrom('', '', '.'))
  .map(([labels, dot]) => `${labels.join('.')}${dot}`);
const longName = fc
  .tuple(fc.integer({ min: 250, max: 256 }), fc.constantFrom('', '.'))
  .map(([n, dot]) => `${nameOfLength(n)}${dot}`);
const proxyHost = fc.oneof(
  ipv4,
  ipv6,
  hostName,
  longName,
  fc.constantFrom('', '[::1', 'a b', '1.2.3', '999', '1.2.3.4.5'),
);
const port = fc.oneof(
  fc.integer({ min: 0, max: 70_000 }).map(String),
  fc.constantFrom('', '00080', '000001', '0', '00000', '65535', '65536', '99999', '1a', ' 1', '+1', '1 '),
);
const proxyUrl = fc
  .tuple(
    space,
    scheme,
    fc.constantFrom('://', '://', '://', ':/', '//'),
    userinfo,
    proxyHost,
    fc.constantFrom(':', ':', ':', ''),
    port,
    fc.constantFrom('', '', '/', '//', '/x', '?q', '#f', ' /'),
    space,
  )
  .map((parts) => parts.join(''));

describe('the constraints the document states are the ones the server enforces', () => {
  let t: TestApp;
  /** Never given a proxy: a target that passes the schema and the SSRF rules meets an empty pool (503). */
  let empty: TestApp;
  let doc: Document;
  before(async () => {
    // Every address is exempt from the SSRF rules, so that an answer tells the schema's verdict.
    [t, empty] = await Promise.all([
      makeApp({ ROTA_SSRF_ALLOW: '0.0.0.0/0,::/0' }),
      makeApp({ ROTA_SSRF_ALLOW: '0.0.0.0/0,::/0' }),
    ]);
    doc = (await t.app.inject({ url: '/openapi.json' })).json();
  });
  after(async () => Promise.all([t?.close(), empty?.close()]));

  it('POST proxies: the url schema accepts exactly what the proxy URL parser accepts', () => {
    const url = bodySchema(doc, 'post', `${API}/proxies`).properties.url;
    const documented = validator(url);
    const fixed = [
      'http://1.2.3.4:8080',
      ' socks5h://user:p%40ss@proxy.example:1080/ \n',
      'HTTP://[fe80::1%eth0]:3128',
      'http://1.2.3.4.:80',
      `http://${nameOfLength(253)}:1`,
      `http://${nameOfLength(253)}.:1`,
      `http://${nameOfLength(254)}:1`,
      'http://h:00080',
      'http://h:0',
      'http://h:65536',
      'http://123:80',
      'http://1.2.3:80',
      'http://a%zz@h:1',
      'http://%C3%A9:%F0%9F%98%80@h:1',
      'http://%ED%A0%80@h:1',
      'http://h:1/path',
      'ftp://h:1',
      '\u0085http://h:1',
    ];
    for (const s of fixed) assert.equal(documented(s), parseProxyUrl(s).ok, JSON.stringify(s));
    fc.assert(
      fc.property(proxyUrl, (s) => documented(s) === parseProxyUrl(s).ok),
      { numRuns: 5000, seed: 20261125 },
    );
  });

  it('POST proxies: credentials in the url or as fields, not both, as documented', async () => {
    const documented = validator(bodySchema(doc, 'post', `${API}/proxies`));
    const urls = ['u:p@', 'u@', ':p@', '@', ':@', '', '%41@', 'u:@'];
    const fields = [{}, { username: 'x' }, { password: '' }, { username: '', password: 'y' }];
    let n = 0;
    for (const info of urls) {
      for (const extra of fields) {
        const body = { url: `http://${info}10.9.0.${++n}:3128`, ...extra };
        const res = await t.app.inject({ method: 'POST', url: `${API}/proxies`, ...json(body) });
        assert.ok([201, 400].includes(res.statusCode), res.body);
        assert.equal(res.statusCode === 201, documented(body), `${JSON.stringify(body)}: ${res.body}`);
        if (res.statusCode === 400) assert.equal(res.json().error.code, 'INVALID_PROXY_FORMAT');
      }
    }
  });

  it('POST request: every url the pattern allows parses as an http(s) URL without credentials', () => {
    assert.equal(bodySchema(doc, 'post', `${API}/request`).properties.url?.pattern, TARGET_URL_PATTERN);
    const allowed = new RegExp(TARGET_URL_PATTERN, 'u');
    fc.assert(
      fc.property(fc.stringMatching(allowed), (s) => {
        // What parseTarget (422) and the SSRF rules' scheme and credential checks (400) look at.
        const url = new URL(s);
        return ['http:', 'https:'].includes(url.protocol) && url.username === '' && url.password === '';
      }),
      { numRuns: 3000, seed: 20261125 },
    );
  });

  it('POST request: a target the pattern allows meets the pool; one it refuses is refused', async () => {
    const documented = validator(bodySchema(doc, 'post', `${API}/request`));
    const cases = [
      'http://203.0.113.7/',
      'HTTPS://[2001:db8::1]:8443/a b?q=é#frag',
      'https://10.1.2.3:0/x',
      'http://198.51.100.1?x',
      'ftp://203.0.113.7/',
      'http://user:pw@203.0.113.7/',
      'http://203.0.113.7:65536/',
      'not a url',
      'http:///',
    ];
    for (const url of cases) {
      const res = await empty.app.inject({ method: 'POST', url: `${API}/request`, ...json({ url }) });
      const allowed = documented({ url, method: 'GET', headers: {} });
      assert.equal(res.statusCode === 503, allowed, `${url}: ${res.statusCode} ${res.body}`);
      if (!allowed) assert.ok([400, 422].includes(res.statusCode), `${url}: ${res.statusCode}`);
    }
  });

  it('POST request: header names, header values and base64 bodies are checked as documented', async () => {
    const documented = validator(bodySchema(doc, 'post', `${API}/request`));
    const cases: [Record<string, unknown>, (string | number)[] | null][] = [
      [{ headers: { 'X-Ok': 'v', accept: '*/*' } }, null],
      [{ headers: { 'bad name': 'v' } }, ['body', 'headers', 'bad name']],
      [{ headers: { 'x-a': 'line\r\nInjected: 1' } }, ['body', 'headers', 'x-a']],
      [{ headers: { 'x-a': 'nul\u0000' } }, ['body', 'headers', 'x-a']],
      [{ headers: { 'x-a': 'tab\tand é are fine' } }, null],
      [{ body: 'aGk=', body_encoding: 'base64' }, null],
      [{ body: '', body_encoding: 'base64' }, null],
      [{ body: null, body_encoding: 'base64' }, null],
      [{ body: 'aGk', body_encoding: 'base64' }, ['body', 'body']],
      [{ body: 'aG=k', body_encoding: 'base64' }, ['body', 'body']],
      [{ body: 'aGk', body_encoding: 'utf8' }, null],
    ];
    for (const [extra, loc] of cases) {
      const body = { url: 'http://203.0.113.7/', ...extra };
      const res = await empty.app.inject({ method: 'POST', url: `${API}/request`, ...json(body) });
      const label = JSON.stringify(extra);
      assert.equal(documented({ method: 'GET', headers: {}, ...body }), loc === null, label);
      if (loc === null) {
        assert.equal(res.statusCode, 503, `${label}: ${res.body}`);
        continue;
      }
      assert.equal(res.statusCode, 422, `${label}: ${res.body}`);
      const detail = res.json().detail as { loc: (string | number)[]; input: unknown }[];
      assert.ok(
        detail.some((d) => JSON.stringify(d.loc) === JSON.stringify(loc)),
        `${label}: ${JSON.stringify(detail)}`,
      );
      if (loc[1] === 'headers') assert.ok(!res.body.includes('Injected'), 'a header value is not echoed');
    }
  });

  it('PUT config: cors_origins follow the documented pattern, `*` only without credentials', async () => {
    const origin = fc
      .tuple(
        fc.constantFrom('http', 'https', 'HTTP', 'ftp', ''),
        fc.constantFrom('://', '//'),
        fc.oneof(
          fc.stringMatching(/^[A-Za-z0-9.-]{1,12}$/),
          fc.constantFrom('[::1]', '[2001:db8::1]', '[::1', 'a b', 'é.example', 'a_b', ''),
        ),
        fc.constantFrom('', ':8080', ':1', ':123456', ':', ':x'),
        fc.constantFrom('', '', '/', '/path', '?q'),
      )
      .map((parts) => parts.join(''));
    const samples = [...fc.sample(origin, { numRuns: 60, seed: 20261125 }), '*', 'http://a.example', ''];
    const credentialsOff = await makeApp({ ROTA_CORS_ALLOW_CREDENTIALS: 'false' });
    try {
      for (const app of [t, credentialsOff]) {
        const spec: Document = (await app.app.inject({ url: '/openapi.json' })).json();
        const documented = validator(bodySchema(spec, 'put', `${API}/config`).properties.cors_origins);
        for (const o of samples) {
          const res = await app.app.inject({
            method: 'PUT',
            url: `${API}/config`,
            ...json({ cors_origins: [o] }),
          });
          assert.equal(res.statusCode === 200, documented([o]), `${JSON.stringify(o)}: ${res.body}`);
          if (res.statusCode !== 200) assert.equal(res.json().error.code, 'INVALID_CONFIGURATION');
        }
        const wildcard = await app.app.inject({
          method: 'PUT',
          url: `${API}/config`,
          ...json({ cors_origins: ['*'] }),
        });
        assert.equal(wildcard.statusCode, app === t ? 400 : 200, 'credentials decide whether * is allowed');
      }
    } finally {
      await credentialsOff.close();
    }
  });

  it('PUT ban-policy: a blank body pattern is refused as documented', async () => {
    const patterns = bodySchema(doc, 'put', `${API}/ban-policy`).properties.body_patterns;
    const documented = validator(patterns);
    for (const p of ['banned', ' x ', ' ', '\t\n', '\u00a0', '\u3000\ufeff', 'é']) {
      const res = await t.app.inject({
        method: 'PUT',
        url: `${API}/ban-policy`,
        ...json({ body_patterns: [p] }),
      });
      assert.equal(res.statusCode === 200, documented([p]), `${JSON.stringify(p)}: ${res.body}`);
    }
  });
});
