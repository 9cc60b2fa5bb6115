import assert from 'node:assert/strict';
import { test } from 'node:test';
import { maskProxyLine, maskQuery } from './proxy-line.ts';
import { redactString, redactText } from './redact.ts';

test('every proxy-line form loses its credentials, valid or not', () => {
  const cases: [string, string][] = [
    ['http://user:p@ss@10.0.0.1:8080', 'http://[REDACTED]@10.0.0.1:8080'],
    ['10.0.0.1:8080:user:pa:ss', '10.0.0.1:8080:[REDACTED]'],
    ['user:pass:10.0.0.1:8080', '[REDACTED]:10.0.0.1:8080'],
    ['user:pass@10.0.0.1:8080', '[REDACTED]@10.0.0.1:8080'],
    ['socks5://h.example:1080:user:pass', 'socks5://h.example:1080:[REDACTED]'],
    ['[::1]:8080:user:pass', '[::1]:8080:[REDACTED]'],
    ['h:notaport:user:pass', 'h:[REDACTED]'],
    ['bad_host!:99999:user:pass', 'bad_host!:99999:[REDACTED]'],
    [':1024:user:pass', ':1024:[REDACTED]'],
    // host:port:user:pass or user:pass:host:port? Either way nothing is kept.
    ['bob:1234:h:80', '[REDACTED]'],
    ['http://user:pa ss:h:80', 'http://[REDACTED]'],
  ];
  for (const [line, want] of cases) assert.equal(maskProxyLine(line), want, line);
});

test('URL query values and fragments are masked, the path and names kept', () => {
  assert.equal(maskQuery('/list?token=abc&page=2&flag#x'), '/list?token=***&page=***&***#***');
  assert.equal(maskProxyLine('https://lists.test/p.txt?token=abc'), 'https://lists.test/p.txt?token=***');
  assert.equal(maskProxyLine('https://lists.test/p.txt'), 'https://lists.test/p.txt');
});

test('free text keeps addresses, times, paths and messages readable', () => {
  for (const text of [
    'Error: connect ECONNREFUSED 127.0.0.1:9',
    'Refused by the SSRF rules: 10.0.0.1:80 is private',
    'at run (file:///app/src/x.ts:12:5)',
    '2001:db8::1',
    '2024-01-01T10:00:00.000Z',
    '/api/v1/proxies/:id',
  ]) {
    assert.equal(redactString(text), text);
  }
});

test('JSON lines are redacted as data, broken ones by their secret keys', () => {
  assert.equal(
    redactText('{"url":"h:1:user:pw","password":"x"}'),
    '{"url":"h:1:[REDACTED]","password":"[REDACTED]"}',
  );
  assert.ok(!redactText('{"url":"http://h:1","password":"s3cr3t').includes('s3cr3t'));
  assert.equal(redactText('password=s3cr3t other'), 'password=*** other');
  assert.equal(redactText('h:1:u:p1\nh:2:u:p2'), 'h:1:[REDACTED]\nh:2:[REDACTED]');
});
