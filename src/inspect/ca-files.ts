/**
 * The operator's own inspection CA: ROTA_CA_CERT and ROTA_CA_KEY, two PEM files, both or neither.
 * Checked when the configuration loads (config.ts, every problem names its variable) and read again by
 * the authority on first need, with the same checks. Node's crypto only (no X.509 library at start-up).
 *
 * The first certificate of ROTA_CA_CERT signs the leaves; any further ones (intermediates up to a root)
 * are sent after it in the chain. No message here ever quotes the key file's content.
 */
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Reader } from '../config-reader.ts';

export interface CaFiles {
  readonly certPath: string;
  readonly keyPath: string;
}

/** How a CA key signs: ECDSA with the hash that fits its curve, or RSASSA-PKCS1-v1_5 with SHA-256. */
export type SigningAlgorithm =
  | { readonly name: 'ECDSA'; readonly namedCurve: string; readonly hash: string }
  | { readonly name: 'RSASSA-PKCS1-v1_5'; readonly hash: string };

/** The CA read from the files: the chain to send after a leaf, the signer's key, how it signs. */
export interface CaMaterial {
  readonly chainPem: string;
  readonly keyPem: string;
  readonly algorithm: SigningAlgorithm;
}

export type CaFilesResult =
  | { readonly ok: true; readonly material: CaMaterial }
  | { readonly ok: false; readonly problems: readonly string[] };

const CERT = 'ROTA_CA_CERT';
const KEY = 'ROTA_CA_KEY';
const CURVES: Readonly<Record<string, { namedCurve: string; hash: string }>> = {
  prime256v1: { namedCurve: 'P-256', hash: 'SHA-256' },
  secp384r1: { namedCurve: 'P-384', hash: 'SHA-384' },
  secp521r1: { namedCurve: 'P-521', hash: 'SHA-512' },
};

/** The algorithm a private key signs with, or null when inspection cannot sign with its type. */
export function signingAlgorithmOf(key: KeyObject): SigningAlgorithm | null {
  if (key.asymmetricKeyType === 'rsa') return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  if (key.asymmetricKeyType !== 'ec') return null;
  const curve = CURVES[key.asymmetricKeyDetails?.namedCurve ?? ''];
  return curve === undefined ? null : { name: 'ECDSA', ...curve };
}

/** ROTA_CA_CERT and ROTA_CA_KEY for config.ts: null when neither is set; problems go to the reader. */
export function parseCaFiles(r: Reader): CaFiles | null {
  const certPath = r.optStr(CERT);
  const keyPath = r.optStr(KEY);
  if (certPath === null && keyPath === null) return null;
  if (certPath === null || keyPath === null) {
    const [missing, given] = certPath === null ? [CERT, KEY] : [KEY, CERT];
    r.problems.push(
      `${missing}: required when ${given} is set (the inspection CA's certificate and key go together)`,
    );
    return null;
  }
  const files = { certPath, keyPath };
  const read = readCaFiles(files);
  if (!read.ok) r.problems.push(...read.problems);
  return files;
}

function readText(name: string, path: string): string | string[] {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unknown error';
    return [`${name}: cannot read ${path} (${code})`];
  }
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----/g;

function readCert(path: string, now: number): { chainPem: string; cert: X509Certificate } | string[] {
  const text = readText(CERT, path);
  if (Array.isArray(text)) return text;
  const blocks = text.match(PEM_CERT);
  if (blocks === null) return [`${CERT}: ${path} holds no PEM certificate`];
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(blocks[0] ?? '');
  } catch {
    return [`${CERT}: ${path}: the first certificate cannot be parsed`];
  }
  if (!cert.ca) return [`${CERT}: ${path} is not a CA certificate (basicConstraints CA:TRUE is missing)`];
  if (cert.validToDate.getTime() <= now) return [`${CERT}: ${path} expired on ${cert.validTo}`];
  if (cert.validFromDate.getTime() > now) return [`${CERT}: ${path} is not valid before ${cert.validFrom}`];
  return { chainPem: `${blocks.join('\n')}\n`, cert };
}

function readKey(path: string): { keyPem: string; key: KeyObject } | string[] {
  const text = readText(KEY, path);
  if (Array.isArray(text)) return text;
  try {
    return { keyPem: text, key: createPrivateKey(text) };
  } catch {
    return [`${KEY}: ${path} is not an unencrypted PEM private key`];
  }
}

function matches(cert: X509Certificate, key: KeyObject): boolean {
  try {
    return cert.checkPrivateKey(key);
  } catch {
    return false;
  }
}

/** Reads and checks both files: a CA certificate, valid now, and the private key of its public key. */
export function readCaFiles(files: CaFiles, now: number = Date.now()): CaFilesResult {
  const cert = readCert(files.certPath, now);
  const key = readKey(files.keyPath);
  const problems = [...(Array.isArray(cert) ? cert : []), ...(Array.isArray(key) ? key : [])];
  if (Array.isArray(cert) || Array.isArray(key)) return { ok: false, problems };
  const algorithm = signingAlgorithmOf(key.key);
  if (algorithm === null) {
    const type = key.key.asymmetricKeyType ?? 'unknown';
    return {
      ok: false,
      problems: [`${KEY}: a ${type} key; inspection signs with EC (P-256, P-384, P-521) or RSA`],
    };
  }
  if (!matches(cert.cert, key.key)) {
    return {
      ok: false,
      problems: [`${KEY}: ${files.keyPath} does not match the certificate of ${CERT} (${files.certPath})`],
    };
  }
  return { ok: true, material: { chainPem: cert.chainPem, keyPem: key.keyPem, algorithm } };
}
