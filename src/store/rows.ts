import { Buffer } from 'node:buffer';
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

const EMPTY_TAGS: readonly string[] = Object.freeze([]);

/**
 * A proxy loaded from a SQL store: credentials kept sealed and decrypted on first read.
 *
 * Why a class: start-up loads up to hundreds of thousands of these, and the cost per proxy is paid by
 * every instance. Measured with 100,000 proxies from SQLite (heap snapshot, per proxy): the earlier
 * object literal with a `get password()` went to dictionary mode (an 808-byte property table), and its
 * closures kept the whole row alive, with two Buffers of sealed bytes (~500 bytes). Here the getters are
 * on the prototype, the sealed bytes are kept as a latin1 string (one byte per byte, no Buffer objects),
 * and nothing else of the row is retained. Decrypting both credentials lazily also takes the AES work
 * (about 380 ms for 100,000 usernames) out of start-up: a username is read when the proxy is first
 * dialled, or when another proxy with the same address is added (pool/identity.ts).
 *
 * A damaged value throws CredentialDecryptError at that first read, never garbage, and again on the next.
 */
class LoadedRecord implements ProxyRecord {
  readonly id: string;
  readonly protocol: Protocol;
  readonly host: string;
  readonly port: number;
  readonly weight: number;
  readonly country: string | null;
  readonly tags: readonly string[];
  readonly createdAt: number;
  readonly updatedAt: number;
  #cipher: CredentialCipher;
  #userSealed: string | null;
  #user: string | null = null;
  #passSealed: string | null;
  #pass: string | null = null;

  constructor(row: SealedRow, cipher: CredentialCipher) {
    this.id = row.id;
    this.protocol = row.protocol as Protocol;
    this.host = row.host;
    this.port = row.port;
    this.weight = row.weight;
    this.country = row.country;
    this.tags = row.tags === '[]' ? EMPTY_TAGS : (JSON.parse(row.tags) as string[]);
    this.createdAt = Number(row.created_at);
    this.updatedAt = Number(row.updated_at);
    this.#cipher = cipher;
    this.#userSealed = row.username_enc === null ? null : row.username_enc.toString('latin1');
    this.#passSealed = row.password_enc === null ? null : row.password_enc.toString('latin1');
  }

  get hasCredentials(): boolean {
    return (
      this.#userSealed !== null || this.#user !== null || this.#passSealed !== null || this.#pass !== null
    );
  }

  get username(): string | null {
    if (this.#userSealed !== null) {
      this.#user = this.#open(this.#userSealed, 'username');
      this.#userSealed = null;
    }
    return this.#user;
  }

  get password(): string | null {
    if (this.#passSealed !== null) {
      this.#pass = this.#open(this.#passSealed, 'password');
      this.#passSealed = null;
    }
    return this.#pass;
  }

  #open(sealed: string, field: string): string {
    return this.#cipher.open(Buffer.from(sealed, 'latin1'), context(this.id, field));
  }
}

/**
 * A record from its row. With `lazy` (start-up: every row), credentials are decrypted on first read;
 * without (one row read back), at once, so that a damaged value fails the read that asked for it.
 */
export function recordFromRow(row: SealedRow, cipher: CredentialCipher, lazy = false): ProxyRecord {
  if (!(PROTOCOLS as readonly string[]).includes(row.protocol)) {
    throw new CredentialDecryptError(`stored proxy ${row.id} has an unknown protocol`);
  }
  const r = new LoadedRecord(row, cipher);
  if (!lazy) {
    void r.username;
    void r.password;
  }
  return r;
}
