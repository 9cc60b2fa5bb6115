/**
 * A password, in every proxy-line form Rota reads and in invalid variants of each, sent through
 * `POST proxies`, `POST proxies/import` (text, NDJSON, JSON) and the validation paths (schema errors that
 * echo `input`, a body that is not JSON, `PUT sources`): the password never appears in an answer nor in
 * any log line at any level, the audit lines included. The app logs through the production logger's
 * options (src/lib/logger.ts), captured in memory.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import type { TestApp } from './helpers/app.ts';
import { makeLoggedApp } from './helpers/logged-app.ts';

/** Characters that break naive patterns: separators of every form, quotes, escapes, spaces. */
const TRICKY = [':', '@', '/', '#', '?', ' ', '%', '"', '\\', '&', '=', '[', ']', 'é', '\t', ',', ';', '{'];
const tricky = fc.array(fc.constantFrom(...TRICKY, '://', 'a', '9'), { maxLength: 4 }).map((a) => a.join(''));
/** Its core is what must never show, whole or in part: a leak of any piece of it is caught. */
const core = fc.stringMatching(/^[a-z0-9]{12}$/).map((s) => `pw${s}`);
const password = fc.record({ before: tricky, core, after: tricky });
const user = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9._-]{1,10}$/),
  tricky.map((t) => `u${t}`),
);
const scheme = fc.constantFrom('http', 'https', 'socks5', 'socks4', 'HTTP', 'ftp');
const host = fc.constantFrom('127.0.0.1', '[::1]', 'proxy.test', 'bad_host!', '999.1.1.1', '');
const port = fc.oneof(
  fc.integer({ min: 1024, max: 65535 }).map(String),
  fc.constantFrom('0', '99999', 'abc', ''),
);

interface Case {
  scheme: string;
  host: string;
  port: string;
  user: string;
  pass: string;
  core: string;
}

const kase = fc
  .record({ scheme, host, port, user, password })
  .map(({ password: p, ...rest }): Case => ({ ...rest, pass: p.before + p.core + p.after, core: p.core }));

/** Every form Rota reads a proxy line in, filled with this case's parts (valid or not). */
function forms(c: Case): string[] {
  const { scheme: s, host: h, port: p, user: u, pass: pw } = c;
  return [
    `${s}://${u}:${pw}@${h}:${p}`,
    `${s}://${encodeURIComponent(u)}:${encodeURIComponent(pw)}@${h}:${p}`,
    `${h}:${p}:${u}:${pw}`,
    `${u}:${pw}:${h}:${p}`,
    `${u}:${pw}@${h}:${p}`,
    // With an `@` in the password this is a URL like any other, its host what follows the `@`: Rota
    // reads it so (as WHATWG does), and a host is shown.
    `${s}://${h}:${p}:${u}:${pw.replaceAll('@', '%')}`,
    `${h}:${p}:${u}:${pw}:extra`,
  ];
}

describe('a password in any proxy-line form never reaches an answer or a log line', () => {
  let t: TestApp;
  before(async () => {
    t = await makeLoggedApp({
      // Only loopback: a closed port, so that any check of an added proxy fails at once.
      ROTA_HEALTH_CHECK_URL: 'http://127.0.0.1:9/generate_204',
      ROTA_SSRF_ALLOW: '127.0.0.0/8',
    });
  });
  after(() => t.close());

  async function send(method: 'POST' | 'PUT', url: string, type: string, payload: string): Promise<string> {
    const res = await t.app.inject({ method, url, headers: { 'content-type': type }, payload });
    return `${res.statusCode} ${JSON.stringify(res.headers)} ${res.body}`;
  }

  /** Sends every request of `c`, then checks the answers and the log lines they produced. */
  async function check(c: Case, requests: (lines: string[]) => Promise<string>[]): Promise<void> {
    const from = t.logs.length;
    const answers = await Promise.all(requests(forms(c)));
    const logs = t.logs.slice(from);
    const where = `password ${JSON.stringify(c.pass)} (user ${JSON.stringify(c.user)})`;
    for (const a of answers) assert.ok(!a.includes(c.core), `an answer shows the ${where}: ${a}`);
    for (const l of logs) assert.ok(!l.includes(c.core), `a log line shows the ${where}: ${l}`);
    assert.ok(
      logs.some((l) => l.includes('"audit":true')),
      'the audit log saw the requests',
    );
  }

  test('POST proxies: the url in each form, and beside username and password fields', async () => {
    await fc.assert(
      fc.asyncProperty(kase, (c) =>
        check(c, (lines) => [
          ...lines.map((url) => send('POST', '/api/v1/proxies', 'application/json', JSON.stringify({ url }))),
          ...lines.map((url) =>
            send('POST', '/api/v1/proxies', 'application/json', JSON.stringify({ url, weight: 'x' })),
          ),
          send(
            'POST',
            '/api/v1/proxies',
            'application/json',
            JSON.stringify({ url: `${c.scheme}://${c.host}:${c.port}`, username: c.user, password: c.pass }),
          ),
          send('POST', '/api/v1/proxies', 'application/json', JSON.stringify({ url: 7, password: c.pass })),
          send(
            'POST',
            '/api/v1/proxies',
            'application/json',
            JSON.stringify({ url: 'http://127.0.0.1:1', pw: c.pass }),
          ),
          // Not JSON: the parser's error must not quote it.
          send('POST', '/api/v1/proxies', 'application/json', `{"url":${JSON.stringify(lines[2])}`),
        ]),
      ),
      { numRuns: 60 },
    );
  });

  test('POST proxies/import: text, NDJSON and JSON lists of every form', async () => {
    await fc.assert(
      fc.asyncProperty(kase, (c) =>
        check(c, (lines) => [
          send('POST', '/api/v1/proxies/import', 'text/plain', lines.join('\n')),
          send('POST', '/api/v1/proxies/import?protocol=socks5', 'text/plain', lines.join('\r\n')),
          send(
            'POST',
            '/api/v1/proxies/import',
            'application/x-ndjson',
            [
              ...lines.map((url) => JSON.stringify({ url })),
              JSON.stringify({ url: `http://${c.host}:${c.port}`, username: c.user, password: c.pass }),
              `{"url":${JSON.stringify(lines[3])}`,
              `{"url":"http://127.0.0.1:1","password":${JSON.stringify(c.pass)}`,
            ].join('\n'),
          ),
          send(
            'POST',
            '/api/v1/proxies/import',
            'application/json',
            JSON.stringify(lines.map((url) => ({ url }))),
          ),
          send('POST', '/api/v1/proxies/import', 'application/json', JSON.stringify(lines)),
        ]),
      ),
      { numRuns: 40 },
    );
  });

  test('PUT sources: a line or a token as a source URL', async () => {
    await fc.assert(
      fc.asyncProperty(kase, (c) =>
        check(c, (lines) => [
          send(
            'PUT',
            '/api/v1/sources',
            'application/json',
            JSON.stringify(lines.map((url, i) => ({ name: `s${i}`, url }))),
          ),
          send(
            'PUT',
            '/api/v1/sources',
            'application/json',
            JSON.stringify([{ name: 'q', url: `http://10.0.0.1/list?token=${encodeURIComponent(c.pass)}` }]),
          ),
        ]),
      ),
      { numRuns: 30 },
    );
  });
});
