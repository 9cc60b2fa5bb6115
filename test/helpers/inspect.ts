/**
 * For the inspection tests (src/inspect/): a logger whose lines are kept, an operator CA written to PEM
 * files (made with @peculiar/x509), a SQLite store on a file, and a TLS handshake against a server.
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { connect, type SecureContext, TLSSocket } from 'node:tls';
import pino, { type Logger } from 'pino';
import { EC_P256, privateKeyPem, randomSerial, subtle, x509 } from '../../src/inspect/x509.ts';
import { SqliteStore } from '../../src/store/sqlite.ts';

export function keptLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: pino({ level: 'trace' }, sink), lines };
}

export interface OperatorCa {
  readonly certPath: string;
  readonly keyPath: string;
  readonly certPem: string;
  readonly keyPem: string;
}

const RSA = {
  name: 'RSASSA-PKCS1-v1_5',
  hash: 'SHA-256',
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
};

/** A CA (or, with `ca: false`, a plain certificate) and its key, written as PEM files in `dir`. */
export async function writeOperatorCa(
  dir: string,
  opts: { name?: string; rsa?: boolean; ca?: boolean } = {},
): Promise<OperatorCa> {
  const alg = opts.rsa ? RSA : EC_P256;
  const keys = (await subtle.generateKey(alg, true, ['sign', 'verify'])) as CryptoKeyPair;
  const isCa = opts.ca ?? true;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: `CN=${opts.name ?? 'Operator test CA'}, O=Operator`,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 365 * 86_400_000),
    signingAlgorithm: alg,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(isCa, undefined, true),
      new x509.KeyUsagesExtension(
        isCa
          ? x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign
          : x509.KeyUsageFlags.digitalSignature,
        true,
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const tag = opts.name?.replace(/\W/g, '') ?? 'op';
  const certPath = join(dir, `${tag}-ca.pem`);
  const keyPath = join(dir, `${tag}-ca.key`);
  const certPem = cert.toString('pem');
  const keyPem = await privateKeyPem(keys.privateKey);
  writeFileSync(certPath, certPem);
  writeFileSync(keyPath, keyPem);
  return { certPath, keyPath, certPem, keyPem };
}

type CryptoKeyPair = {
  publicKey: import('node:crypto').webcrypto.CryptoKey;
  privateKey: import('node:crypto').webcrypto.CryptoKey;
};

export async function sqliteAt(path: string): Promise<SqliteStore> {
  const s = new SqliteStore({ path, secretKey: null, logger: pino({ level: 'silent' }), insertSliceMs: 0 });
  await s.open();
  return s;
}

/**
 * A TLS server on loopback whose SNICallback is `sni`, a client that trusts `caPem` and asks for
 * `host` (as SNI for a name; for an IP address it connects to it, without SNI, and the server answers
 * with `fallback`), and the socket after the verified handshake, or the handshake's error.
 */
export async function handshake(
  sni: (name: string, cb: (err: Error | null, ctx?: SecureContext) => void) => void,
  caPem: string,
  host: string,
  fallback?: SecureContext,
): Promise<{ socket: TLSSocket; error: Error | null }> {
  // As a door does after CONNECT: TLS over an accepted socket, SNI or else the door's own context.
  const server = createServer((raw) => {
    const tls = new TLSSocket(raw, {
      isServer: true,
      SNICallback: sni,
      ...(fallback ? { secureContext: fallback } : {}),
    });
    tls.on('secure', () => tls.end('hi'));
    tls.on('error', () => tls.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  // A client sends no SNI for an IP address: the server answers with its default context then.
  const isIp = /^[\d.]+$|:/.test(host);
  try {
    return await new Promise((resolve) => {
      const socket = connect({
        host: isIp ? host : '127.0.0.1',
        port,
        ca: caPem,
        ...(isIp ? {} : { servername: host }),
      });
      socket.once('secureConnect', () => resolve({ socket, error: null }));
      socket.once('error', (error) => resolve({ socket, error }));
    });
  } finally {
    server.close();
  }
}
