import { Buffer } from 'node:buffer';
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hkdfSync,
  type KeyObject,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';
import {
  closeSync,
  fchmodSync,
  fsyncSync,
  linkSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { RotaError } from '../errors/rota-error.ts';

/** Sealed values start with this byte, so that a later format or key can live beside this one. */
const FORMAT_V1 = 0x01;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + IV_BYTES + TAG_BYTES;
const KEY_BYTES = 32;

/** A problem with the encryption key that must stop start-up. Never carries key material. */
export class StorageKeyError extends RotaError {
  constructor(message: string) {
    super('STORAGE_KEY_ERROR', message);
    this.name = 'StorageKeyError';
  }
}

/** A stored value that does not authenticate: wrong key or damaged data. Never returns garbage instead. */
export class CredentialDecryptError extends RotaError {
  constructor(message: string) {
    super('CREDENTIAL_DECRYPT_ERROR', message);
    this.name = 'CredentialDecryptError';
  }
}

function subkey(master: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), `rota/${purpose}`, KEY_BYTES));
}

/**
 * Seals credential strings with AES-256-GCM. Independent subkeys are derived from the master key so that
 * the cipher key, the identity HMAC key and the stored fingerprint never reveal one another.
 */
export class CredentialCipher {
  /** Safe to store: tells whether a later key is the same one without revealing it. */
  readonly fingerprint: Buffer;
  // KeyObjects, not Buffers: creating a cipher from a Buffer key costs ~10x more, which dominates loading
  // 100,000 proxies.
  private readonly encKey: KeyObject;
  private readonly macKey: KeyObject;

  constructor(master: Buffer) {
    if (master.length !== KEY_BYTES) throw new StorageKeyError(`encryption key must be ${KEY_BYTES} bytes`);
    this.encKey = createSecretKey(subkey(master, 'credentials/v1'));
    this.macKey = createSecretKey(subkey(master, 'identity/v1'));
    this.fingerprint = subkey(master, 'fingerprint/v1');
  }

  /**
   * `context` (e.g. the proxy id and field) is authenticated but not stored, so a sealed value copied to
   * another row or field fails to open instead of silently moving a password.
   */
  seal(plain: string, context: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.encKey, iv);
    cipher.setAAD(aad(context));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.of(FORMAT_V1), iv, cipher.getAuthTag(), body]);
  }

  open(sealed: Buffer, context: string): string {
    if (sealed.length < HEADER_BYTES || sealed[0] !== FORMAT_V1) {
      throw new CredentialDecryptError(`stored credential (${context}) has an unknown format`);
    }
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.encKey, sealed.subarray(1, 1 + IV_BYTES));
      decipher.setAAD(aad(context));
      decipher.setAuthTag(sealed.subarray(1 + IV_BYTES, HEADER_BYTES));
      const text = decipher.update(sealed.subarray(HEADER_BYTES));
      // final() throws unless the tag authenticates, so the text is never returned unverified.
      const tail = decipher.final();
      return (tail.length === 0 ? text : Buffer.concat([text, tail])).toString('utf8');
    } catch {
      throw new CredentialDecryptError(
        `cannot decrypt stored credential (${context}): the key does not match or the data is damaged`,
      );
    }
  }

  /** Keyed, deterministic digest: lets a UNIQUE index compare identities that contain a username. */
  identity(text: string): string {
    return createHmac('sha256', this.macKey).update(text, 'utf8').digest('hex');
  }

  matches(fingerprint: Uint8Array): boolean {
    return fingerprint.byteLength === KEY_BYTES && timingSafeEqual(this.fingerprint, fingerprint);
  }
}

/** A secret as text in a setting: its sealed bytes in base64. */
export function sealText(cipher: CredentialCipher, plain: string, context: string): string {
  return cipher.seal(plain, context).toString('base64');
}

export function openText(cipher: CredentialCipher, sealed: string, context: string): string {
  return cipher.open(Buffer.from(sealed, 'base64'), context);
}

const AAD_PREFIX = String.fromCharCode(FORMAT_V1);

function aad(context: string): Buffer {
  return Buffer.from(AAD_PREFIX + context, 'utf8');
}

export type KeySource =
  | { readonly kind: 'env' }
  | { readonly kind: 'file'; readonly path: string; readonly created: boolean };

export interface ResolvedKey {
  readonly key: Buffer;
  readonly source: KeySource;
}

export interface ResolveKeyOptions {
  readonly secretKey: Buffer | null;
  readonly keyFilePath: string;
  /** False when the database already holds encrypted data: a new key could never open it. */
  readonly mayCreate: boolean;
  readonly logger: Logger;
}

/** ROTA_SECRET_KEY when set, else the key file beside the database, created on first use. */
export function resolveKey(o: ResolveKeyOptions): ResolvedKey {
  if (o.secretKey) return { key: o.secretKey, source: { kind: 'env' } };
  const existing = readKeyFile(o.keyFilePath, o.logger);
  if (existing) return { key: existing, source: { kind: 'file', path: o.keyFilePath, created: false } };
  if (!o.mayCreate) {
    throw new StorageKeyError(
      `the database holds encrypted credentials but its key is missing: set ROTA_SECRET_KEY or restore the key file ${o.keyFilePath}`,
    );
  }
  const created = createKeyFile(o.keyFilePath, o.logger);
  return { key: created.key, source: { kind: 'file', path: o.keyFilePath, created: created.created } };
}

/** Names the key in errors without ever showing it. */
export function describeKeySource(s: KeySource): string {
  return s.kind === 'env' ? 'ROTA_SECRET_KEY' : `the key file ${s.path}`;
}

function readKeyFile(path: string, logger: Logger): Buffer | null {
  let text: string;
  try {
    text = readFileSync(path, 'latin1');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new StorageKeyError(`cannot read the key file ${path}: ${(e as Error).message}`);
  }
  // 64 hex digits, so that the file's content also works as ROTA_SECRET_KEY.
  const hex = text.endsWith('\n') ? text.slice(0, -1) : text;
  if (!/^[0-9a-f]{64}$/i.test(hex)) {
    throw new StorageKeyError(
      `the key file ${path} has the wrong size or format (${text.length} bytes; expected 64 hex digits). ` +
        'Refusing to start rather than lose the credentials it protects: restore the original file or set ROTA_SECRET_KEY',
    );
  }
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    logger.warn({ path, mode: mode.toString(8) }, 'key file is readable by other users; run chmod 600 on it');
  }
  return Buffer.from(hex, 'hex');
}

/**
 * Writes a complete file under a temporary name, then hard-links it into place: link() never replaces an
 * existing file, and a crash can never leave a half-written key behind under the real name.
 */
function createKeyFile(path: string, logger: Logger): { key: Buffer; created: boolean } {
  const key = randomBytes(KEY_BYTES);
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    fchmodSync(fd, 0o600);
    writeSync(fd, `${key.toString('hex')}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    // Another process won the race: use its key.
    const theirs = readKeyFile(path, logger);
    if (theirs) return { key: theirs, created: false };
    throw e;
  } finally {
    rmSync(tmp, { force: true });
  }
  syncDir(dirname(path));
  logger.info({ path }, 'created a new credential encryption key file; back it up with the database');
  return { key, created: true };
}

function syncDir(dir: string): void {
  let fd: number | null = null;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // Some file systems refuse fsync on a directory; the file itself is already synced.
  } finally {
    if (fd !== null) closeSync(fd);
  }
}
