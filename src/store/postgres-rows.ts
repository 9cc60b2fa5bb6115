/**
 * Rows of rota_proxies to records and back, for the PostgreSQL store. Credentials are sealed with the
 * same CredentialCipher as SQLite, bound to the row id and the field, so a value copied elsewhere fails
 * to open instead of moving a password; the identity column is a keyed digest that the UNIQUE index
 * compares without ever holding a username in clear.
 */
import type { Buffer } from 'node:buffer';
import { identityKey, PROTOCOLS, type Protocol, type ProxyRecord } from '../pool/types.ts';
import { type CredentialCipher, CredentialDecryptError } from './crypto.ts';

export interface ProxyRow {
  id: string;
  /** BIGINT: the driver returns it as a string. */
  seq: string;
  protocol: string;
  host: string;
  port: number;
  username_enc: Buffer | null;
  password_enc: Buffer | null;
  weight: number;
  country: string | null;
  tags: string;
  created_at: string;
  updated_at: string;
}

export const COLUMNS =
  'id, seq, protocol, host, port, username_enc, password_enc, weight, country, tags, created_at, updated_at';

/** Columns written by an insert, in the order of insertParams(). */
export const INSERT_COLUMNS =
  'id, protocol, host, port, username_enc, password_enc, identity, weight, country, tags, created_at, updated_at';
export const INSERT_ARITY = 12;

function context(id: string, field: string): string {
  return `proxy ${id} ${field}`;
}

export function insertParams(r: ProxyRecord, cipher: CredentialCipher): unknown[] {
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

/** `($1, ..., $12), ($13, ...)` for `rows` records. */
export function valuesList(rows: number): string {
  const groups: string[] = [];
  for (let i = 0; i < rows; i++) {
    const base = i * INSERT_ARITY;
    groups.push(`(${Array.from({ length: INSERT_ARITY }, (_, j) => `$${base + j + 1}`).join(', ')})`);
  }
  return groups.join(', ');
}

/**
 * With `lazyPassword` (start-up, possibly 100,000 rows) the password is decrypted on first read, as in the
 * SQLite store; a damaged value still throws CredentialDecryptError at that read, never garbage.
 */
export function toRecord(row: ProxyRow, cipher: CredentialCipher, lazyPassword = false): ProxyRecord {
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
