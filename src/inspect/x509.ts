/**
 * The one place inspection loads @peculiar/x509: with the Reflect metadata polyfill its dependency
 * injection needs (imported first, so that it is in place when the library evaluates) and Node's own
 * WebCrypto as its crypto provider. Also the small pieces of key handling the authority and the leaves
 * share: private keys to and from PKCS#8 PEM, key pairs, serial numbers.
 */
import 'reflect-metadata';
import { createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import type { SigningAlgorithm } from './ca-files.ts';

x509.cryptoProvider.set(webcrypto);

export { x509 };

export type CryptoKey = webcrypto.CryptoKey;
export type CryptoKeyPair = webcrypto.CryptoKeyPair;

export const subtle = webcrypto.subtle;

/** EC P-256 with ECDSA over SHA-256: the algorithm of every key inspection makes (CA and leaves). */
export const EC_P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/** A non-extractable signing key from a PEM private key (PKCS#8, or SEC1/PKCS#1: Node reads them all). */
export async function importSigningKey(keyPem: string, alg: SigningAlgorithm): Promise<CryptoKey> {
  const der = createPrivateKey(keyPem).export({ type: 'pkcs8', format: 'der' });
  const params =
    alg.name === 'ECDSA' ? { name: 'ECDSA', namedCurve: alg.namedCurve } : { name: alg.name, hash: alg.hash };
  return subtle.importKey('pkcs8', der, params, false, ['sign']);
}

/** A private key as PKCS#8 PEM (for a TLS context, or to seal in the store). */
export async function privateKeyPem(key: CryptoKey): Promise<string> {
  const der = await subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

/** A fresh EC P-256 key pair, made off the event loop (WebCrypto runs it on the thread pool). */
export async function newKeyPair(): Promise<CryptoKeyPair> {
  return subtle.generateKey(EC_P256, true, ['sign', 'verify']);
}

/** A random positive 128-bit serial number, in hexadecimal. */
export function randomSerial(): string {
  const b = randomBytes(16);
  b[0] = ((b[0] ?? 0) & 0x7f) | 0x01;
  return b.toString('hex');
}
