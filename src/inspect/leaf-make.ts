/**
 * One leaf certificate and its TLS context: a fresh EC P-256 key (WebCrypto, off the event loop), a
 * certificate for one host signed by the CA, and `tls.createSecureContext` over the key and the chain
 * (leaf, then the CA's certificates). ALPN is the server's business, not the context's.
 */
import { createSecureContext, type SecureContext } from 'node:tls';
import { RotaError } from '../errors/rota-error.ts';
import type { CaSigner } from './ca-make.ts';
import type { InspectHost } from './hosts.ts';
import { newKeyPair, privateKeyPem, randomSerial, x509 } from './x509.ts';

/** A leaf ready to serve: its TLS context and when it stops being valid (ms since the epoch). */
export interface Leaf {
  readonly context: SecureContext;
  readonly certPem: string;
  readonly notBefore: number;
  readonly notAfter: number;
  /** When less than a third of its life is left: the next request for its host makes a new one. */
  readonly renewAt: number;
}

/** The longest a leaf is valid, notBefore to notAfter. */
export const MAX_LEAF_LIFE_MS = 30 * 24 * 3_600_000;
/** How far back notBefore is set, for clients whose clocks run behind. */
export const CLOCK_SKEW_MS = 3_600_000;
/** The shortest life worth making a leaf for (a CA about to expire gives no more). */
const MIN_LIFE_MS = 60_000;
const MAX_CN = 64;

function extensions(ca: CaSigner, host: InspectHost): x509.Extension[] {
  const out: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
    new x509.SubjectAlternativeNameExtension([{ type: host.kind, value: host.name }]),
  ];
  if (ca.keyId !== null) out.push(new x509.AuthorityKeyIdentifierExtension(ca.keyId));
  return out;
}

/** A leaf for `host` signed by `ca`, valid from CLOCK_SKEW_MS before `now` for `lifeMs` (≤ 30 days). */
export async function makeLeaf(ca: CaSigner, host: InspectHost, now: number, lifeMs: number): Promise<Leaf> {
  const notBefore = now - CLOCK_SKEW_MS;
  const notAfter = Math.min(notBefore + Math.min(lifeMs, MAX_LEAF_LIFE_MS), ca.notAfter.getTime());
  if (notAfter - now < MIN_LIFE_MS)
    throw new RotaError('CONFIGURATION_ERROR', 'inspection: the CA has expired');
  const keys = await newKeyPair();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: host.name.length <= MAX_CN ? [{ CN: [host.name] }] : [{ O: ['Rota inspection'] }],
    issuer: ca.cert.subjectName,
    notBefore: new Date(notBefore),
    notAfter: new Date(notAfter),
    signingAlgorithm: ca.algorithm,
    publicKey: keys.publicKey,
    signingKey: ca.key,
    extensions: [...extensions(ca, host), await x509.SubjectKeyIdentifierExtension.create(keys.publicKey)],
  });
  const certPem = cert.toString('pem');
  const context = createSecureContext({
    key: await privateKeyPem(keys.privateKey),
    cert: `${certPem}\n${ca.chainPem}`,
    minVersion: 'TLSv1.2',
  });
  const renewAt = notAfter - (notAfter - notBefore) / 3;
  return { context, certPem, notBefore, notAfter, renewAt };
}
