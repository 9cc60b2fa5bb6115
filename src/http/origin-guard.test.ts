import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../config.ts';
import { defaultAllowedHosts, parseHost } from '../lib/allowed-hosts.ts';
import { HostCheck, isForeignWrite, isOwnOrigin } from './origin-guard.ts';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (e) {
    if (e instanceof ConfigError) return [...e.problems];
    throw e;
  }
}

describe('parseHost', () => {
  it('lowercases, drops one trailing dot and reads the port', () => {
    assert.deepEqual(parseHost('LocalHost.:8000'), { name: 'localhost', port: 8000 });
    assert.deepEqual(parseHost('127.0.0.1'), { name: '127.0.0.1', port: null });
    assert.deepEqual(parseHost('Rota.Example.'), { name: 'rota.example', port: null });
  });

  it('reads bracketed IPv6 addresses in their compressed form', () => {
    assert.deepEqual(parseHost('[::1]:8000'), { name: '[::1]', port: 8000 });
    assert.deepEqual(parseHost('[0:0:0:0:0:0:0:1]'), { name: '[::1]', port: null });
    assert.deepEqual(parseHost('[FE80::A]'), { name: '[fe80::a]', port: null });
  });

  it('refuses what is not a host', () => {
    for (const bad of [
      '',
      '::1',
      '[::1',
      '[127.0.0.1]',
      '[::1]x',
      'a b',
      'user@host',
      'host/path',
      'host:',
      'host:99999',
      'host:80:80',
      'a..b',
      '.',
      'host, other',
    ]) {
      assert.equal(parseHost(bad), null, bad);
    }
  });
});

describe('allowed hosts', () => {
  it('defaults to the loopback names on a loopback address, to any host otherwise', () => {
    assert.deepEqual(defaultAllowedHosts('127.0.0.1'), ['localhost', '127.0.0.1', '[::1]']);
    assert.deepEqual(defaultAllowedHosts('127.0.0.2'), ['localhost', '127.0.0.1', '[::1]', '127.0.0.2']);
    assert.deepEqual(defaultAllowedHosts('::1'), ['localhost', '127.0.0.1', '[::1]']);
    assert.deepEqual(defaultAllowedHosts('localhost'), ['localhost', '127.0.0.1', '[::1]']);
    for (const any of ['0.0.0.0', '::', '192.168.1.5', 'rota.internal']) {
      assert.deepEqual(defaultAllowedHosts(any), ['*'], any);
    }
  });

  it('reads ROTA_ALLOWED_HOSTS from the config, normalised, and refuses a bad entry', () => {
    assert.deepEqual(loadConfig({}).allowedHosts, ['localhost', '127.0.0.1', '[::1]']);
    assert.deepEqual(loadConfig({ ROTA_HOST: '0.0.0.0' }).allowedHosts, ['*']);
    const c = loadConfig({ ROTA_ALLOWED_HOSTS: 'Rota.Example., [0::1]:8000, *' });
    assert.deepEqual(c.allowedHosts, ['rota.example', '[::1]:8000', '*']);
    const problems = problemsOf({ ROTA_ALLOWED_HOSTS: 'ok.example, bad host, ::1' });
    assert.equal(problems.length, 2);
    assert.ok(problems.every((p) => p.startsWith('ROTA_ALLOWED_HOSTS:')));
    assert.deepEqual(problemsOf({ ROTA_ALLOWED_HOSTS: ',' }).length, 1);
  });

  it('matches names whatever the case or trailing dot; a port only when the entry names one', () => {
    const check = new HostCheck(['localhost', '127.0.0.1', '[::1]', 'rota.example:8443']);
    for (const ok of ['localhost', 'LOCALHOST:80', 'localhost.:8000', '127.0.0.1:1', '[::1]:8000', '[::1]']) {
      assert.equal(check.allows(ok), true, ok);
    }
    assert.equal(check.allows('rota.example:8443'), true);
    for (const bad of [
      'attacker.example',
      'attacker.example:8000',
      'rota.example',
      'rota.example:8000',
      '127.0.0.2:8000',
      '[::2]:8000',
      'localhost.attacker.example',
      'garbage host',
    ]) {
      assert.equal(check.allows(bad), false, bad);
    }
    assert.equal(check.allows(undefined), true, 'no Host header (HTTP/1.0): not a browser');
  });

  it('allows any host with *, and keeps its memory of decisions bounded', () => {
    assert.equal(new HostCheck(['*']).allows('attacker.example'), true);
    const check = new HostCheck(['localhost']);
    for (let i = 0; i < 1000; i++) assert.equal(check.allows(`h${i}.example`), false);
    assert.equal(check.allows('localhost:1'), true);
  });
});

describe('own origin', () => {
  it('is the host and port the request was sent to, by http or https', () => {
    assert.equal(isOwnOrigin('http://127.0.0.1:8000', '127.0.0.1:8000'), true);
    assert.equal(isOwnOrigin('http://[::1]:8000', '[::1]:8000'), true);
    assert.equal(isOwnOrigin('http://localhost', 'LOCALHOST:80'), true);
    assert.equal(isOwnOrigin('https://rota.example', 'rota.example'), true);
    assert.equal(isOwnOrigin('http://localhost.:8000', 'localhost:8000'), true);
  });

  it('is not another port, host, scheme or null', () => {
    assert.equal(isOwnOrigin('http://127.0.0.1:9000', '127.0.0.1:8000'), false);
    assert.equal(isOwnOrigin('http://127.0.0.2:8000', '127.0.0.1:8000'), false);
    assert.equal(isOwnOrigin('http://[::1]:9000', '[::1]:8000'), false);
    assert.equal(isOwnOrigin('https://rota.example', 'rota.example:80'), false);
    assert.equal(isOwnOrigin('null', '127.0.0.1:8000'), false);
    assert.equal(isOwnOrigin('file://127.0.0.1:8000', '127.0.0.1:8000'), false);
    assert.equal(isOwnOrigin('http://127.0.0.1:8000/x', '127.0.0.1:8000'), false);
    assert.equal(isOwnOrigin('http://127.0.0.1:8000', undefined), false);
  });
});

describe('foreign writes', () => {
  const none = () => [];
  const write = (headers: Record<string, string | string[]>, method = 'POST') => ({
    method,
    headers: { host: '127.0.0.1:8000', ...headers },
  });

  it('are writes from another origin, or null, unless a CORS origin', () => {
    assert.equal(isForeignWrite(write({ origin: 'http://127.0.0.2:8000' }), none), true);
    assert.equal(isForeignWrite(write({ origin: 'null' }), none), true);
    assert.equal(isForeignWrite(write({ origin: 'http://127.0.0.1:8000' }), none), false);
    const cors = () => ['https://ui.example'];
    assert.equal(isForeignWrite(write({ origin: 'https://ui.example' }, 'DELETE'), cors), false);
    assert.equal(isForeignWrite(write({ origin: 'https://other.example' }, 'PUT'), cors), true);
    const any = () => ['*'];
    assert.equal(isForeignWrite(write({ origin: 'https://other.example' }), any), false);
    assert.equal(isForeignWrite(write({ origin: 'null' }), any), true, '* is not null');
  });

  it('never concern GET, HEAD or OPTIONS', () => {
    for (const m of ['GET', 'HEAD', 'OPTIONS']) {
      assert.equal(isForeignWrite(write({ origin: 'null', 'sec-fetch-site': 'cross-site' }, m), none), false);
    }
  });

  it('without Origin, are what the browser calls cross-site or same-site', () => {
    assert.equal(isForeignWrite(write({ 'sec-fetch-site': 'cross-site' }), none), true);
    assert.equal(isForeignWrite(write({ 'sec-fetch-site': 'same-site' }), none), true);
    assert.equal(isForeignWrite(write({ 'sec-fetch-site': 'same-origin' }), none), false);
    assert.equal(isForeignWrite(write({ 'sec-fetch-site': 'none' }), none), false);
    assert.equal(isForeignWrite(write({}), none), false, 'curl and scripts send no Origin');
  });
});
