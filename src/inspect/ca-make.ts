/**
 * Rota's own inspection CA, made when no operator CA is configured, and the signer every CA becomes
 * once loaded (made here, read from the store, or from the operator's files).
 */
import { randomBytes } from 'node:crypto';
import type { SigningAlgorithm } from './ca-files.ts';
import {
  type CryptoKey,
  EC_P256,
  importSigningKey,
  newKeyPair,
  privateKeyPem,
  randomSerial,
  x509,
} from './x509.ts';

/** Where the CA in use came from. */
export type CaOrigin = 'operator' | 'store' | 'memory';

/** A CA that signs leaves. Its key is non-extractable: nothing can turn it back into text. */
export interface CaSigner {
  readonly cert: x509.X509Certificate;
  /** What follows a leaf in the TLS chain: the CA's certificate(s), PEM. Also what clients trust. */
  readonly chainPem: string;
  readonly key: CryptoKey;
  readonly algorithm: SigningAlgorithm;
  /** The CA's subject key identifier (hex), for the leaves' authority key identifier. */
  readonly keyId: string | null;
  readonly notAfter: Date;
  readonly origin: CaOrigin;
}

/** A CA just made: its certificate and its key, PEM (kept only as long as it takes to seal or import). */
export interface NewCa {
  readonly certPem: string;
  readonly keyPem: string;
}

const HOUR_MS = 3_600_000;
const CA_LIFE_MS = 3_652 * 24 * HOUR_MS;

/**
 * A fresh CA: EC P-256, `CN=Rota inspection CA <8 hex>, O=Rota`, CA:TRUE and keyCertSign + cRLSign
 * (both critical), a subject key identifier, valid from an hour ago for ten years.
 */
export async function makeRotaCa(now: number): Promise<NewCa> {
  const keys = await newKeyPair();
  const id = randomBytes(4).toString('hex');
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: `CN=Rota inspection CA ${id}, O=Rota`,
    notBefore: new Date(now - HOUR_MS),
    notAfter: new Date(now + CA_LIFE_MS),
    signingAlgorithm: EC_P256,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: cert.toString('pem'), keyPem: await privateKeyPem(keys.privateKey) };
}

/** The signer of a CA given as PEM: its chain (the signing certificate first) and its private key. */
export async function signerFrom(
  chainPem: string,
  keyPem: string,
  algorithm: SigningAlgorithm,
  origin: CaOrigin,
): Promise<CaSigner> {
  const cert = new x509.X509Certificate(x509.PemConverter.decodeFirst(chainPem));
  const key = await importSigningKey(keyPem, algorithm);
  const keyId = cert.getExtension(x509.SubjectKeyIdentifierExtension)?.keyId ?? null;
  return { cert, chainPem, key, algorithm, keyId, notAfter: cert.notAfter, origin };
}
