import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import { CredentialCipher, CredentialDecryptError, resolveKey, StorageKeyError } from './crypto.ts';

function captureLogger() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

describe('CredentialCipher', () => {
  const cipher = new CredentialCipher(randomBytes(32));

  it('round-trips ASCII, unicode and empty strings', () => {
    for (const s of ['hunter2', 'pä$$wörd 🔑 密码 ::@/%', '']) {
      assert.equal(cipher.open(cipher.seal(s, 'ctx'), 'ctx'), s);
    }
  });

  it('uses a fresh IV per value and a version prefix', () => {
    const a = cipher.seal('same', 'ctx');
    const b = cipher.seal('same', 'ctx');
    assert.notDeepEqual(a, b);
    assert.equal(a[0], 0x01);
    assert.equal(a.length, 1 + 12 + 16 + 4);
    assert.ok(!a.includes(Buffer.from('same')));
  });

  it('refuses a wrong key with a clear error instead of garbage', () => {
    const sealed = cipher.seal('secret-value', 'ctx');
    const other = new CredentialCipher(randomBytes(32));
    assert.throws(
      () => other.open(sealed, 'ctx'),
      (e: unknown) =>
        e instanceof CredentialDecryptError &&
        /key does not match or the data is damaged/.test(e.message) &&
        !e.message.includes('secret-value'),
    );
  });

  it('binds a value to its context, so it cannot be moved to another row or field', () => {
    const sealed = cipher.seal('pw', 'proxy a password');
    assert.throws(() => cipher.open(sealed, 'proxy b password'), CredentialDecryptError);
    assert.throws(() => cipher.open(sealed, 'proxy a username'), CredentialDecryptError);
  });

  it('detects tampering, truncation and unknown formats', () => {
    const sealed = cipher.seal('pw-value', 'ctx');
    for (const i of [5, 20, sealed.length - 1]) {
      const bad = Buffer.from(sealed);
      bad[i] = (bad[i] ?? 0) ^ 0x01;
      assert.throws(() => cipher.open(bad, 'ctx'), CredentialDecryptError, `byte ${i}`);
    }
    assert.throws(() => cipher.open(sealed.subarray(0, 20), 'ctx'), /unknown format/);
    const v2 = Buffer.from(sealed);
    v2[0] = 0x02;
    assert.throws(() => cipher.open(v2, 'ctx'), /unknown format/);
  });

  it('derives a deterministic, key-dependent identity digest that hides its input', () => {
    const id = cipher.identity('http://h:1\u0000alice');
    assert.match(id, /^[0-9a-f]{64}$/);
    assert.equal(cipher.identity('http://h:1\u0000alice'), id);
    assert.notEqual(cipher.identity('http://h:1\u0000bob'), id);
    assert.notEqual(new CredentialCipher(randomBytes(32)).identity('http://h:1\u0000alice'), id);
  });

  it('recognises its own key by fingerprint only', () => {
    const key = randomBytes(32);
    const a = new CredentialCipher(key);
    assert.ok(a.matches(new CredentialCipher(Buffer.from(key)).fingerprint));
    assert.ok(!a.matches(new CredentialCipher(randomBytes(32)).fingerprint));
    assert.ok(!a.fingerprint.includes(key.subarray(0, 8)));
    assert.throws(() => new CredentialCipher(randomBytes(16)), StorageKeyError);
  });
});

describe('resolveKey', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rota-key-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  const keyPath = () => join(dir, `db${++n}.key`);

  it('prefers ROTA_SECRET_KEY and then creates no file', () => {
    const path = keyPath();
    const secretKey = randomBytes(32);
    const r = resolveKey({ secretKey, keyFilePath: path, mayCreate: true, logger: captureLogger().logger });
    assert.deepEqual(r.key, secretKey);
    assert.equal(r.source.kind, 'env');
    assert.throws(() => statSync(path), { code: 'ENOENT' });
  });

  it('creates a 0600 key file once and reuses it', () => {
    const path = keyPath();
    const { logger, lines } = captureLogger();
    const first = resolveKey({ secretKey: null, keyFilePath: path, mayCreate: true, logger });
    assert.deepEqual(first.source, { kind: 'file', path, created: true });
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(readFileSync(path, 'latin1'), `${first.key.toString('hex')}\n`);
    assert.ok(lines.some((l) => l.includes('created a new credential encryption key file')));
    assert.ok(!lines.join('').includes(first.key.toString('hex')), 'the key is never logged');
    const second = resolveKey({ secretKey: null, keyFilePath: path, mayCreate: true, logger });
    assert.deepEqual(second.key, first.key);
    assert.deepEqual(second.source, { kind: 'file', path, created: false });
    assert.deepEqual(
      readdirSync(dir).filter((f) => f.endsWith('.tmp')),
      [],
      'no temporary file is left behind',
    );
  });

  it('accepts a key file written by hand without a newline', () => {
    const path = keyPath();
    const key = randomBytes(32);
    writeFileSync(path, key.toString('hex'), { mode: 0o600 });
    const r = resolveKey({
      secretKey: null,
      keyFilePath: path,
      mayCreate: true,
      logger: captureLogger().logger,
    });
    assert.deepEqual(r.key, key);
  });

  it('warns when the key file is readable by others', () => {
    const path = keyPath();
    writeFileSync(path, `${randomBytes(32).toString('hex')}\n`);
    chmodSync(path, 0o644);
    const { logger, lines } = captureLogger();
    resolveKey({ secretKey: null, keyFilePath: path, mayCreate: true, logger });
    assert.ok(lines.some((l) => l.includes('"level":40') && l.includes('chmod 600')));
  });

  it('refuses a key file of the wrong size and never overwrites it', () => {
    const path = keyPath();
    writeFileSync(path, 'abcdef\n', { mode: 0o600 });
    assert.throws(
      () =>
        resolveKey({ secretKey: null, keyFilePath: path, mayCreate: true, logger: captureLogger().logger }),
      (e: unknown) =>
        e instanceof StorageKeyError && e.message.includes(path) && /wrong size or format/.test(e.message),
    );
    assert.equal(readFileSync(path, 'latin1'), 'abcdef\n');
  });

  it('refuses to invent a key for a database that already has one', () => {
    const path = keyPath();
    assert.throws(
      () =>
        resolveKey({ secretKey: null, keyFilePath: path, mayCreate: false, logger: captureLogger().logger }),
      /key is missing: set ROTA_SECRET_KEY or restore the key file/,
    );
    assert.throws(() => statSync(path), { code: 'ENOENT' });
  });
});
