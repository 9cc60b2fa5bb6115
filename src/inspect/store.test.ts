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
      settleMs: 20,
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
      settleMs: 20,
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
    let puts = 0;
    for (const s of [s1, s2]) {
      const put = s.putSetting.bind(s);
      s.putSetting = (k, v) => {
        if (k === CA_SETTING) puts++;
        return put(k, v);
      };
    }
    const made: NewCa[] = [];
    let open = () => {};
    const gate = new Promise<void>((r) => {
      open = r;
    });
    const mk = recordingMaker(made, gate);
    const { logger } = keptLogger();
    const a = new InspectionAuthority({ files: null, store: s1, logger, settleMs: 30, makeCa: mk });
    const b = new InspectionAuthority({ files: null, store: s2, logger, settleMs: 30, makeCa: mk });
    const both = Promise.all([a.caPem(), b.caPem()]);
    while (made.length < 2) await new Promise((r) => setImmediate(r));
    open();
    const [pa, pb] = await both;
    assert.equal(made.length, 2, 'both made one');
    assert.equal(pa, pb, 'both use the same');
    assert.equal(puts, 2, 'both wrote (each read none after making its own): settling made them agree');
    const later = new InspectionAuthority({ files: null, store: s1, logger, settleMs: 30 });
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
      settleMs: 5,
      makeCa: recordingMaker(made),
    }).caPem();
    const stored = (await s.getSetting(CA_SETTING)) as { key: string; createdAt: number };
    const flipped = stored.key.slice(0, -4) + (stored.key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    await s.putSetting(CA_SETTING, { ...stored, key: flipped, createdAt: 0 });
    const again = new InspectionAuthority({ files: null, store: s, logger: log.logger, settleMs: 5 });
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
