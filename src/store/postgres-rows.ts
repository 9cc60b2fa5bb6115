/**
 * Rows of rota_proxies to records and back, for the PostgreSQL store. Credentials are sealed with the
 * same CredentialCipher as SQLite, bound to the row id and the field, so a value copied elsewhere fails
 * to open instead of moving a password; the identity column is a keyed digest that the UNIQUE index
 * compares without ever holding a username in clear.
 */
import type { ProxyRecord } from '../pool/types.ts';
import type { CredentialCipher } from './crypto.ts';
import {
  EXIT_COLUMNS,
  INSERT_COLUMNS,
  ROW_COLUMNS,
  recordFromRow,
  type SealedRow,
  sealedValues,
  UPDATE_COLUMNS,
} from './rows.ts';

export type ProxyRow = SealedRow & {
  /** BIGINT: the driver returns it as a string. */
  seq: string;
};

export const COLUMNS = ROW_COLUMNS;
export { INSERT_COLUMNS };
export const INSERT_ARITY = INSERT_COLUMNS.split(',').length;

/** `UPDATE rota_proxies SET a = $1, b = $2 ... WHERE id = $n+1`. */
function updateSql(columns: readonly string[]): string {
  const set = columns.map((c, i) => `${c} = $${i + 1}`).join(', ');
  return `UPDATE rota_proxies SET ${set} WHERE id = $${columns.length + 1}`;
}

/** A PATCH: UPDATE_COLUMNS, the id last. */
export const UPDATE_SQL = updateSql(UPDATE_COLUMNS);
export const SET_EXIT_SQL = updateSql(EXIT_COLUMNS);

export function insertParams(r: ProxyRecord, cipher: CredentialCipher): unknown[] {
  return sealedValues(r, cipher);
}

/** `($1, ..., $15), ($16, ...)` for `rows` records. */
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
