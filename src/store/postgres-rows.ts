/**
 * Rows of rota_proxies to records and back, for the PostgreSQL store. Credentials are sealed with the
 * same CredentialCipher as SQLite, bound to the row id and the field, so a value copied elsewhere fails
 * to open instead of moving a password; the identity column is a keyed digest that the UNIQUE index
 * compares without ever holding a username in clear.
 */
import type { Buffer } from 'node:buffer';
import type { ProxyRecord } from '../pool/types.ts';
import type { CredentialCipher } from './crypto.ts';
import { recordFromRow, sealedValues } from './rows.ts';

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

export function insertParams(r: ProxyRecord, cipher: CredentialCipher): unknown[] {
  return sealedValues(r, cipher);
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

/** As in the SQLite store (rows.ts): the password decrypted on first read when `lazyPassword`. */
export function toRecord(row: ProxyRow, cipher: CredentialCipher, lazyPassword = false): ProxyRecord {
  return recordFromRow(row, cipher, lazyPassword);
}
