import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { keptLogger, writeOperatorCa } from '../../test/helpers/inspect.ts';
import { ConfigError, loadConfig } from '../config.ts';
import { isRotaError } from '../errors/rota-error.ts';
import { InspectionAuthority } from './authority.ts';

const dir = mkdtempSync(join(tmpdir(), 'rota-inspect-files-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function problems(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.problems;
  }
  return [];
}

describe('ROTA_CA_CERT and ROTA_CA_KEY', () => {
  it('are both or neither; the inspection cache has a default and bounds', () => {
    assert.equal(loadConfig({}).inspectCa, null);
    assert.equal(loadConfig({}).inspectCacheMax, 10_000);
    assert.equal(loadConfig({ ROTA_INSPECT_CACHE: '50' }).inspectCacheMax, 50);
    assert.match(problems({ ROTA_INSPECT_CACHE: '0' })[0] ?? '', /^ROTA_INSPECT_CACHE: expected an integer/);
    assert.match(
      problems({ ROTA_CA_CERT: '/x.pem' })[0] ?? '',
      /^ROTA_CA_KEY: required when ROTA_CA_CERT is set/,
    );
    assert.match(
      problems({ ROTA_CA_KEY: '/x.key' })[0] ?? '',
      /^ROTA_CA_CERT: required when ROTA_CA_KEY is set/,
    );
  });

  it('name the variable of an unreadable file, a non-CA certificate, a key that does not fit', async () => {
    const good = await writeOperatorCa(dir, { name: 'Good CA' });
    const other = await writeOperatorCa(dir, { name: 'Other CA' });
    const leafOnly = await writeOperatorCa(dir, { name: 'Not a CA', ca: false });
    const garbage = join(dir, 'garbage.key');
    writeFileSync(garbage, 'not a key');
    const cases: [Record<string, string>, RegExp][] = [
      [
        { ROTA_CA_CERT: join(dir, 'missing.pem'), ROTA_CA_KEY: good.keyPath },
        /^ROTA_CA_CERT: cannot read .*missing\.pem \(ENOENT\)$/,
      ],
      [
        { ROTA_CA_CERT: good.certPath, ROTA_CA_KEY: join(dir, 'missing.key') },
        /^ROTA_CA_KEY: cannot read .*missing\.key \(ENOENT\)$/,
      ],
      [
        { ROTA_CA_CERT: good.keyPath, ROTA_CA_KEY: good.keyPath },
        /^ROTA_CA_CERT: .* holds no PEM certificate$/,
      ],
      [
        { ROTA_CA_CERT: leafOnly.certPath, ROTA_CA_KEY: leafOnly.keyPath },
        /^ROTA_CA_CERT: .* is not a CA certificate/,
      ],
      [
        { ROTA_CA_CERT: good.certPath, ROTA_CA_KEY: other.keyPath },
        /^ROTA_CA_KEY: .* does not match the certificate of ROTA_CA_CERT/,
      ],
      [
        { ROTA_CA_CERT: good.certPath, ROTA_CA_KEY: garbage },
        /^ROTA_CA_KEY: .* is not an unencrypted PEM private key$/,
      ],
      [
        { ROTA_CA_CERT: good.certPath, ROTA_CA_KEY: good.certPath },
        /^ROTA_CA_KEY: .* is not an unencrypted PEM private key$/,
      ],
    ];
    for (const [env, want] of cases) {
      const found = problems(env);
      assert.equal(found.length, 1, JSON.stringify(found));
      assert.match(found[0] ?? '', want);
      for (const key of [good.keyPem, other.keyPem]) {
        assert.ok(!found.join('\n').includes(key.split('\n')[1] ?? '?'), 'no key text in a problem');
      }
    }
    assert.deepEqual(loadConfig({ ROTA_CA_CERT: good.certPath, ROTA_CA_KEY: good.keyPath }).inspectCa, {
      certPath: good.certPath,
      keyPath: good.keyPath,
    });
  });

  it('checked again on first need: a file gone since start-up is a clear error, and a later need retries', async () => {
    const op = await writeOperatorCa(dir, { name: 'Gone CA' });
    const config = loadConfig({ ROTA_CA_CERT: op.certPath, ROTA_CA_KEY: op.keyPath });
    const authority = new InspectionAuthority({
      files: config.inspectCa,
      store: null,
      logger: keptLogger().logger,
    });
    unlinkSync(op.keyPath);
    await assert.rejects(
      authority.caPem(),
      (e) => isRotaError(e, 'CONFIGURATION_ERROR') && /ROTA_CA_KEY: cannot read/.test(e.message),
    );
    writeFileSync(op.keyPath, op.keyPem);
    assert.equal(await authority.caPem(), `${op.certPem.trim()}\n`);
  });
});
