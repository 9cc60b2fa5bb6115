import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { inspect } from 'node:util';
import { keptLogger, sqliteAt } from '../../test/helpers/inspect.ts';
import { isRotaError } from '../errors/rota-error.ts';
import { InspectionAuthority } from './authority.ts';
import { CA_SETTING } from './ca-keep.ts';
import { makeRotaCa, type NewCa } from './ca-make.ts';
import { LeafCache } from './leaves.ts';
import { x509 } from './x509.ts';

const dir = mkdtempSync(join(tmpdir(), 'rota-inspect-store-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const dbPath = () => join(dir, `ca${++n}.db`);
const rawBytes = (path: string) =>
  Buffer.concat(['', '-wal', '-shm'].filter((s) => existsSync(path + s)).map((s) => readFileSync(path + s)));

/** The base64 lines of a PEM key: none of them may appear anywhere. */
const keyLines = (pem: string) => pem.split('\n').filter((l) => l !== '' && !l.startsWith('-----'));

function recordingMaker(made: NewCa[], gate?: Promise<void>) {
  return async (now: number) => {
    const ca = await makeRotaCa(now);
    made.push(ca);
    if (gate) await gate;
    return ca;
  };
}

describe('inspection CA in a SQLite store', () => {
  it('is made once, sealed in the store, and reused by the next instance on the same file', async () => {
    const path = dbPath();
    const made: NewCa[] = [];
    const log = keptLogger();
    const s1 = await sqliteAt(path);
    const a1 = new InspectionAuthority({
      files: null,
      store: s1,
      logger: log.logger,
      makeCa: recordingMaker(made),
    });
    const pem = await a1.caPem();
    assert.equal(a1.origin, 'store');
    assert.equal(made.length, 1);
    assert.ok(log.lines.some((l) => l.includes('inspection: made a CA and kept it in the store')));
    assert.ok(!log.lines.some((l) => l.includes('no persistent store')));
    await s1.close();

    const raw = rawBytes(path).toString('latin1');
    assert.ok(raw.includes('BEGIN CERTIFICATE'), 'the certificate is stored');
    assert.ok(!raw.includes('PRIVATE KEY'), 'no PEM private key in the file');
    for (const line of keyLines(made[0]?.keyPem ?? ''))
      assert.ok(!raw.includes(line), 'no key text in the file');

    const s2 = await sqliteAt(path);
    const a2 = new InspectionAuthority({
      files: null,
      store: s2,
      logger: log.logger,
      makeCa: recordingMaker(made),
    });
    assert.equal(await a2.caPem(), pem);
    assert.equal(made.length, 1, 'the second instance made none');
    const leaf = await new LeafCache({ authority: a2, max: 10 }).leafFor('again.test');
    const ca = new x509.X509Certificate(pem);
    assert.ok(
      await new x509.X509Certificate(leaf.certPem).verify({ publicKey: ca.publicKey, signatureOnly: true }),
    );
    for (const line of keyLines(made[0]?.keyPem ?? '')) {
      assert.ok(!log.lines.some((l) => l.includes(line)), 'no key text in a log line');
    }
    await s2.close();
  });

  it('two instances racing for the first CA end with the same one', async () => {
    const path = dbPath();
    const [s1, s2] = [await sqliteAt(path), await sqliteAt(path)];
    const adds: boolean[] = [];
    for (const s of [s1, s2]) {
      const add = s.addSetting.bind(s);
      s.addSetting = async (k, v) => {
        const landed = await add(k, v);
        if (k === CA_SETTING) adds.push(landed);
        return landed;
      };
    }
    const made: NewCa[] = [];
    let open = () => {};
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const mk = recordingMaker(made, gate);
    const { logger } = keptLogger();
    const a = new InspectionAuthority({ files: null, store: s1, logger, makeCa: mk });
    const b = new InspectionAuthority({ files: null, store: s2, logger, makeCa: mk });
    const both = Promise.all([a.caPem(), b.caPem()]);
    while (made.length < 2) await new Promise((r) => setImmediate(r));
    open();
    const [pa, pb] = await both;
    assert.equal(made.length, 2, 'both made one');
    assert.equal(pa, pb, 'both use the same');
    assert.deepEqual(
      adds.sort(),
      [false, true],
      'both tried to add theirs (each read none before making it): one landed, the other took it',
    );
    const later = new InspectionAuthority({ files: null, store: s1, logger });
    assert.equal(await later.caPem(), pa);
    await s1.close();
    await s2.close();
  });

  it('a stored key that cannot be opened is a clear error without key text', async () => {
    const path = dbPath();
    const s = await sqliteAt(path);
    const made: NewCa[] = [];
    const log = keptLogger();
    await new InspectionAuthority({
      files: null,
      store: s,
      logger: log.logger,
      makeCa: recordingMaker(made),
    }).caPem();
    const stored = (await s.getSetting(CA_SETTING)) as { key: string; createdAt: number };
    const flipped = stored.key.slice(0, -4) + (stored.key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    await s.putSetting(CA_SETTING, { ...stored, key: flipped, createdAt: 0 });
    const again = new InspectionAuthority({ files: null, store: s, logger: log.logger });
    const err = await again.caPem().then(
      () => assert.fail('opened a tampered key'),
      (e: unknown) => e,
    );
    assert.ok(isRotaError(err, 'CREDENTIAL_DECRYPT_ERROR'));
    assert.match(err.message, /inspection: the stored CA's key \(setting inspection_ca\) cannot be opened/);
    const shown = `${inspect(err, { depth: 10 })}\n${JSON.stringify(err)}\n${log.lines.join('')}`;
    assert.ok(!shown.includes('PRIVATE KEY'));
    for (const line of keyLines(made[0]?.keyPem ?? '')) assert.ok(!shown.includes(line));
    await s.close();
  });
});
