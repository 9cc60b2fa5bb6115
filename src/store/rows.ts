import type { Buffer } from 'node:buffer';
import { identityKey, PROTOCOLS, type Protocol, type ProxyRecord } from '../pool/types.ts';
import { type CredentialCipher, CredentialDecryptError } from './crypto.ts';

/**
 * A proxy as the SQL stores keep it (SQLite and PostgreSQL alike): credentials sealed with the cipher,
 * each bound to its row and field, tags as JSON. One place turns records into row values and back.
 */
export interface SealedRow {
  id: string;
  protocol: string;
  host: string;
  port: number;
  username_enc: Buffer | null;
  password_enc: Buffer | null;
  weight: number;
  country: string | null;
  tags: string;
  /** PostgreSQL's BIGINT arrives as a string. */
  created_at: number | string;
  updated_at: number | string;
}

function context(id: string, field: string): string {
  return `proxy ${id} ${field}`;
}

/** The values of an insert, in the order id, protocol, host, port, username, password, identity, weight, country, tags, created, updated. */
export function sealedValues(r: ProxyRecord, cipher: CredentialCipher): (string | number | Buffer | null)[] {
  const seal = (v: string | null, field: string) =>
    v === null ? null : cipher.seal(v, context(r.id, field));
  return [
    r.id,
    r.protocol,
    r.host,
    r.port,
    seal(r.username, 'username'),
    seal(r.password, 'password'),
    cipher.identity(identityKey(r)),
    r.weight,
    r.country,
    JSON.stringify(r.tags),
    r.createdAt,
    r.updatedAt,
  ];
}

/**
 * With `lazyPassword` (start-up: 100,000 rows), the password is decrypted on first read, which is when the
 * proxy's dispatcher is first built; half of the start-up decryption work is then never done for proxies
 * that are not used. A damaged value still throws CredentialDecryptError, at that first read. The username
 * is decrypted at once: the pool needs it for the duplicate check.
 */
export function recordFromRow(row: SealedRow, cipher: CredentialCipher, lazyPassword = false): ProxyRecord {
  if (!(PROTOCOLS as readonly string[]).includes(row.protocol)) {
    throw new CredentialDecryptError(`stored proxy ${row.id} has an unknown protocol`);
  }
  const sealed = row.password_enc;
  const openPassword = () => (sealed === null ? null : cipher.open(sealed, context(row.id, 'password')));
  let password: string | null | undefined = lazyPassword
    ? sealed === null
      ? null
      : undefined
    : openPassword();
  return {
    id: row.id,
    protocol: row.protocol as Protocol,
    host: row.host,
    port: row.port,
    username: row.username_enc === null ? null : cipher.open(row.username_enc, context(row.id, 'username')),
    get password() {
      password ??= openPassword();
      return password;
    },
    weight: row.weight,
    country: row.country,
    tags: JSON.parse(row.tags) as string[],
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}
