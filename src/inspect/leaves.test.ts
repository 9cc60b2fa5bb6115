import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, it } from 'node:test';
import { keptLogger } from '../../test/helpers/inspect.ts';
import { isRotaError } from '../errors/rota-error.ts';
import { InspectionAuthority } from './authority.ts';
import { LeafCache } from './leaves.ts';
import { x509 } from './x509.ts';

const DAY = 86_400_000;
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';

function setUp(opts: { max?: number; now?: () => number } = {}) {
  const { logger, lines } = keptLogger();
  const authority = new InspectionAuthority({ files: null, store: null, logger });
  const leaves = new LeafCache({ authority, max: opts.max ?? 100, ...(opts.now ? { now: opts.now } : {}) });
  return { authority, leaves, lines };
}

describe('InspectionAuthority in memory', () => {
  it("makes a CA on first need: Rota's name, CA:TRUE and keyCertSign + cRLSign critical, ten years", async () => {
    const { authority, lines } = setUp();
    assert.equal(authority.origin, null);
    assert.equal(lines.length, 0, 'nothing made or logged before first need');
    const pem = await authority.caPem();
    assert.doesNotMatch(pem, /PRIVATE/);
    const ca = new x509.X509Certificate(pem);
    assert.match(ca.subject, /^CN=Rota inspection CA [0-9a-f]{8}, O=Rota$/);
    const bc = ca.getExtension(x509.BasicConstraintsExtension);
    assert.ok(bc?.ca && bc.critical);
    const ku = ca.getExtension(x509.KeyUsagesExtension);
    assert.equal(ku?.usages, x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign);
    assert.ok(ku?.critical);
    assert.ok(ca.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId);
    const years = (ca.notAfter.getTime() - Date.now()) / (365.25 * DAY);
    assert.ok(years > 9.9 && years < 10.1, `${years} years`);
    assert.equal(new X509Certificate(pem).publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
    assert.equal(await authority.caPem(), pem, 'kept');
    assert.equal(authority.origin, 'memory');
    const warns = lines.filter((l) => l.includes('inspection: a new CA each start (no persistent store)'));
    assert.equal(warns.length, 1);
    assert.equal((JSON.parse(warns[0] ?? '{}') as { level: number }).level, 40);
  });
});

describe('LeafCache', () => {
  it('makes a leaf for a DNS name: SAN, serverAuth, at most 30 days, signed by the CA', async () => {
    const { authority, leaves } = setUp();
    const leaf = await leaves.leafFor('Example.COM.');
    const cert = new X509Certificate(leaf.certPem);
    const ca = new X509Certificate(await authority.caPem());
    assert.equal(cert.subjectAltName, 'DNS:example.com');
    assert.equal(cert.subject, 'CN=example.com');
    assert.equal(cert.issuer, ca.subject);
    assert.ok(cert.checkIssued(ca) && cert.verify(ca.publicKey));
    assert.equal(cert.ca, false);
    assert.deepEqual(cert.keyUsage, [SERVER_AUTH]);
    assert.equal(cert.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
    const life = cert.validToDate.getTime() - cert.validFromDate.getTime();
    assert.ok(life <= 30 * DAY, `life ${life / DAY} days`);
    assert.ok(
      cert.validFromDate.getTime() < Date.now() - 30 * 60_000,
      'notBefore leaves room for clock skew',
    );
    const peculiar = new x509.X509Certificate(leaf.certPem);
    assert.equal(peculiar.getExtension(x509.KeyUsagesExtension)?.usages, x509.KeyUsageFlags.digitalSignature);
    assert.equal(await leaves.contextFor('example.com'), leaf.context, 'one leaf per canonical host');
  });

  it('puts an IP address in an iPAddress SAN', async () => {
    const { leaves } = setUp();
    const v4 = new X509Certificate((await leaves.leafFor('127.0.0.1')).certPem);
    assert.equal(v4.subjectAltName, 'IP Address:127.0.0.1');
    const v6 = new X509Certificate((await leaves.leafFor('[::1]')).certPem);
    assert.match(v6.subjectAltName ?? '', /^IP Address:(0:){7}1$/);
  });

  it('refuses names that are not hosts, and makes nothing for them', async () => {
    const { leaves } = setUp();
    for (const h of ['', '*.example.com', 'bad host', 'a..b']) {
      await assert.rejects(leaves.contextFor(h), (e) => isRotaError(e, 'INVALID_URL'));
    }
    assert.equal(leaves.made, 0);
  });

  it('gives concurrent first requests for one host one leaf', async () => {
    const { leaves } = setUp();
    const contexts = await Promise.all(
      Array.from({ length: 50 }, (_, i) => leaves.contextFor(i % 2 ? 'same.test' : 'SAME.test.')),
    );
    assert.equal(new Set(contexts).size, 1);
    assert.equal(leaves.made, 1);
  });

  it('makes a new leaf once less than a third of its life is left', async () => {
    let now = Date.now();
    const { leaves } = setUp({ now: () => now });
    const first = await leaves.leafFor('renew.test');
    now += 19 * DAY;
    assert.equal(await leaves.leafFor('renew.test'), first, 'two thirds of 30 days not yet gone');
    now += DAY;
    const second = await leaves.leafFor('renew.test');
    assert.notEqual(second, first);
    assert.equal(leaves.made, 2);
    assert.equal(second.notBefore, first.notBefore + 20 * DAY);
    assert.ok(second.notAfter - second.notBefore <= 30 * DAY);
    assert.equal(await leaves.leafFor('renew.test'), second);
  });

  it('keeps at most max contexts, the least recently used going first', async () => {
    const { leaves } = setUp({ max: 50 });
    for (let i = 0; i < 50; i++) await leaves.contextFor(`h${i}.test`);
    await leaves.contextFor('h0.test');
    await leaves.contextFor('h50.test');
    assert.equal(leaves.size, 50);
    const made = leaves.made;
    await leaves.contextFor('h0.test');
    assert.equal(leaves.made, made, 'h0 was used recently: kept');
    await leaves.contextFor('h1.test');
    assert.equal(leaves.made, made + 1, 'h1 was the least recently used: gone');
    for (let i = 0; i < 200; i++) await leaves.contextFor(`h${i}.test`);
    assert.equal(leaves.size, 50);
  });
});
