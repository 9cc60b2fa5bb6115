import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { handshake, keptLogger, writeOperatorCa } from '../../test/helpers/inspect.ts';
import { loadConfig } from '../config.ts';
import { createInspection, sniCallback } from './index.ts';

const dir = mkdtempSync(join(tmpdir(), 'rota-inspect-tls-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const config = (env: Record<string, string> = {}) => loadConfig(env);

describe('inspection over real TLS', () => {
  it('serves a DNS name through SNICallback; the client verifies the chain against caPem', async () => {
    const { authority, leaves } = createInspection(config(), null, keptLogger().logger);
    const { socket, error } = await handshake(
      sniCallback(leaves),
      await authority.caPem(),
      'shop.example.com',
    );
    assert.equal(error, null);
    assert.ok(socket.authorized);
    assert.equal(socket.getPeerCertificate().subjectaltname, 'DNS:shop.example.com');
    assert.ok(['TLSv1.2', 'TLSv1.3'].includes(socket.getProtocol() ?? ''));
    socket.destroy();
  });

  it('serves 127.0.0.1 (no SNI: the door gives the context) with an IP SAN the client checks', async () => {
    const { authority, leaves } = createInspection(config(), null, keptLogger().logger);
    const ctx = await leaves.contextFor('127.0.0.1');
    const { socket, error } = await handshake(sniCallback(leaves), await authority.caPem(), '127.0.0.1', ctx);
    assert.equal(error, null);
    assert.ok(socket.authorized);
    assert.equal(socket.getPeerCertificate().subjectaltname, 'IP Address:127.0.0.1');
    socket.destroy();
  });

  it('fails verification against another CA, and for a name the leaf does not carry', async () => {
    const a = createInspection(config(), null, keptLogger().logger);
    const b = createInspection(config(), null, keptLogger().logger);
    const other = await handshake(sniCallback(a.leaves), await b.authority.caPem(), 'x.example.com');
    assert.match(String(other.error?.message), /self-signed|unable to (get|verify)/i);
    other.socket.destroy();
    const ctx = await a.leaves.contextFor('127.0.0.2');
    const wrongIp = await handshake(sniCallback(a.leaves), await a.authority.caPem(), '127.0.0.1', ctx);
    assert.match(String(wrongIp.error?.message), /IP: 127\.0\.0\.1 is not in the cert's list/);
    wrongIp.socket.destroy();
  });

  for (const rsa of [false, true]) {
    it(`signs with the operator's ${rsa ? 'RSA' : 'EC'} CA from ROTA_CA_CERT + ROTA_CA_KEY`, async () => {
      const op = await writeOperatorCa(dir, { name: `Operator ${rsa ? 'RSA' : 'EC'} CA`, rsa });
      const { logger, lines } = keptLogger();
      const inspection = createInspection(
        config({ ROTA_CA_CERT: op.certPath, ROTA_CA_KEY: op.keyPath }),
        null,
        logger,
      );
      assert.equal(await inspection.authority.caPem(), `${op.certPem.trim()}\n`);
      assert.equal(inspection.authority.origin, 'operator');
      const { socket, error } = await handshake(
        sniCallback(inspection.leaves),
        op.certPem,
        'api.example.org',
      );
      assert.equal(error, null);
      assert.ok(socket.authorized);
      assert.match(String(socket.getPeerCertificate().issuer.CN), /^Operator (RSA|EC) CA$/);
      socket.destroy();
      assert.ok(!lines.some((l) => l.includes('PRIVATE KEY') || l.includes(op.keyPem.split('\n')[1] ?? '?')));
      assert.ok(lines.some((l) => l.includes('inspection: using the operator CA')));
    });
  }
});
