import { Buffer } from 'node:buffer';
import { type ExitIdentity, identityKey, PROTOCOLS, type Protocol, type ProxyRecord } from '../pool/types.ts';
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
  label: string | null;
  username_template_enc: Buffer | null;
  password_template_enc: Buffer | null;
  exit_ip: string | null;
  exit_seen_at: number | string | null;
  exit_country: string | null;
  exit_asn: number | null;
}

/** The columns of a whole row (both stores), in the order of SealedRow. */
export const ROW_COLUMNS =
  'id, seq, protocol, host, port, username_enc, password_enc, weight, country, tags, created_at, ' +
  'updated_at, label, username_template_enc, password_template_enc, exit_ip, exit_seen_at, exit_country, exit_asn';

/** Columns written by an insert, in the order of sealedValues(). */
export const INSERT_COLUMNS =
  'id, protocol, host, port, username_enc, password_enc, identity, weight, country, tags, created_at, ' +
  'updated_at, label, username_template_enc, password_template_enc';

/** Columns an update (PATCH) writes, in the order of updateValues() after the id. */
export const UPDATE_COLUMNS = [
  'username_enc',
  'password_enc',
  'identity',
  'weight',
  'country',
  'tags',
  'updated_at',
  'label',
  'username_template_enc',
  'password_template_enc',
] as const;

/** Columns of the exit, in the order of exitValues(). */
export const EXIT_COLUMNS = ['exit_ip', 'exit_seen_at', 'exit_country', 'exit_asn'] as const;

export function exitValues(exit: ExitIdentity | null): (string | number | null)[] {
  return exit === null ? [null, null, null, null] : [exit.ip, exit.seenAt, exit.country, exit.asn];
}

function exitOf(
  ip: string | null,
  seenAt: number | string | null,
  country: string | null,
  asn: number | null,
) {
  return ip === null
    ? null
    : { ip, seenAt: Number(seenAt ?? 0), country, asn: asn === null ? null : Number(asn) };
}

function context(id: string, field: string): string {
  return `proxy ${id} ${field}`;
}

type Value = string | number | Buffer | null;

/** The values of an insert, in the order of INSERT_COLUMNS. */
export function sealedValues(r: ProxyRecord, cipher: CredentialCipher): Value[] {
  const u = updateValues(r, cipher);
  return [r.id, r.protocol, r.host, r.port, ...u.slice(0, 6), r.createdAt, ...u.slice(6)];
}

/** The values of an update, in the order of UPDATE_COLUMNS. */
export function updateValues(r: ProxyRecord, cipher: CredentialCipher): Value[] {
  const seal = (v: string | null | undefined, field: string) =>
    v === null || v === undefined ? null : cipher.seal(v, context(r.id, field));
  return [
    seal(r.username, 'username'),
    seal(r.password, 'password'),
    cipher.identity(identityKey(r)),
    r.weight,
    r.country,
    JSON.stringify(r.tags),
    r.updatedAt,
    r.label ?? null,
    seal(r.usernameTemplate, 'username_template'),
    seal(r.passwordTemplate, 'password_template'),
  ];
}

const EMPTY_TAGS: readonly string[] = Object.freeze([]);
const NO_BYTES = Buffer.alloc(0);

/**
 * The columns of a page read at start-up, in the order of PackedRow. Both credentials come as one hex
 * string of their sealed bytes, username's first, with each one's length (-1: NULL): measured with
 * 100,000 rows from SQLite, two BLOB columns made two Buffers per row (each with its own backing store
 * to create and free) and took ~600 ms of a ~1.5 s start; one hex string per row, turned into latin1
 * through Node's pooled Buffer, ~370 ms.
 */
export const PACKED_COLUMNS =
  'id, seq, protocol, host, port, weight, country, tags, created_at, updated_at, ' +
  'COALESCE(length(username_enc), -1), COALESCE(length(password_enc), -1), ' +
  "hex(COALESCE(username_enc, x'') || COALESCE(password_enc, x'')), " +
  'label, exit_ip, exit_seen_at, exit_country, exit_asn, username_template_enc, password_template_enc';

/** A row of PACKED_COLUMNS, as better-sqlite3's raw mode gives it. */
export type PackedRow = [
  id: string,
  seq: number,
  protocol: string,
  host: string,
  port: number,
  weight: number,
  country: string | null,
  tags: string,
  createdAt: number,
  updatedAt: number,
  userLength: number,
  passwordLength: number,
  sealedHex: string,
  label: string | null,
  exitIp: string | null,
  exitSeenAt: number | null,
  exitCountry: string | null,
  exitAsn: number | null,
  userTemplate: Buffer | null,
  passwordTemplate: Buffer | null,
];

/** The protocol names as constants: a row's own copy of "http" would be kept by every record. */
function knownProtocol(id: string, name: string): Protocol {
  const p = PROTOCOLS.find((x) => x === name);
  if (p === undefined) throw new CredentialDecryptError(`stored proxy ${id} has an unknown protocol`);
  return p;
}

function tagsOf(json: string): readonly string[] {
  return json === '[]' ? EMPTY_TAGS : (JSON.parse(json) as string[]);
}

/**
 * A proxy loaded from a SQL store: credentials kept sealed and decrypted on first read.
 *
 * Why a class: start-up loads up to hundreds of thousands of these, and the cost per proxy is paid by
 * every instance. Measured with 100,000 proxies from SQLite (heap snapshot, per proxy): the earlier
 * object literal with a `get password()` went to dictionary mode (an 808-byte property table), and its
 * closures kept the whole row alive, with two Buffers of sealed bytes (~500 bytes). Here the getters are
 * on the prototype, both sealed values are kept as one latin1 string (one byte per byte, no Buffer
 * objects), and nothing else of the row is retained. Decrypting both credentials lazily also takes the
 * AES work (about 380 ms for 100,000 usernames) out of start-up: a username is read when the proxy is
 * first dialled, or when another proxy with the same address is added (pool/identity.ts).
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
  readonly label: string | null;
  readonly usernameTemplate: string | null;
  readonly passwordTemplate: string | null;
  readonly exit: ExitIdentity | null;
  #cipher: CredentialCipher;
  /** The sealed bytes as latin1: the username's `#userLength`, then the password's; null once both are open. */
  #sealed: string | null;
  /** -1: no such value. */
  #userLength: number;
  #passwordLength: number;
  /** undefined until decrypted. */
  #user: string | null | undefined = undefined;
  #pass: string | null | undefined = undefined;

  constructor(fields: Omit<ProxyRecord, 'username' | 'password'>, sealed: Sealed, cipher: CredentialCipher) {
    this.id = fields.id;
    this.protocol = fields.protocol;
    this.host = fields.host;
    this.port = fields.port;
    this.weight = fields.weight;
    this.country = fields.country;
    this.tags = fields.tags;
    this.createdAt = fields.createdAt;
    this.updatedAt = fields.updatedAt;
    this.label = fields.label ?? null;
    this.usernameTemplate = fields.usernameTemplate ?? null;
    this.passwordTemplate = fields.passwordTemplate ?? null;
    this.exit = fields.exit ?? null;
    this.#cipher = cipher;
    this.#sealed = sealed.bytes;
    this.#userLength = sealed.userLength;
    this.#passwordLength = sealed.passwordLength;
    if (sealed.userLength < 0) this.#user = null;
    if (sealed.passwordLength < 0) this.#pass = null;
  }

  get hasCredentials(): boolean {
    return this.#userLength >= 0 || this.#passwordLength >= 0;
  }

  get username(): string | null {
    if (this.#user === undefined) {
      this.#user = this.#open(0, this.#userLength, 'username');
      if (this.#pass !== undefined) this.#sealed = null;
    }
    return this.#user;
  }

  get password(): string | null {
    if (this.#pass === undefined) {
      const from = Math.max(this.#userLength, 0);
      this.#pass = this.#open(from, from + this.#passwordLength, 'password');
      if (this.#user !== undefined) this.#sealed = null;
    }
    return this.#pass;
  }

  #open(from: number, to: number, field: string): string {
    const bytes = Buffer.from((this.#sealed ?? '').slice(from, to), 'latin1');
    return this.#cipher.open(bytes, context(this.id, field));
  }
}

/** Both sealed credentials of a row as LoadedRecord keeps them. */
interface Sealed {
  readonly bytes: string | null;
  readonly userLength: number;
  readonly passwordLength: number;
}

function sealedOf(row: SealedRow): Sealed {
  const u = row.username_enc;
  const p = row.password_enc;
  if (u === null && p === null) return { bytes: null, userLength: -1, passwordLength: -1 };
  return {
    bytes: Buffer.concat([u ?? NO_BYTES, p ?? NO_BYTES]).toString('latin1'),
    userLength: u === null ? -1 : u.length,
    passwordLength: p === null ? -1 : p.length,
  };
}

/**
 * A gateway's templates, opened at once: few proxies have one, and the gateway renders them on every
 * attempt. A damaged one throws CredentialDecryptError, like a damaged password.
 */
function templates(id: string, user: Buffer | null, pass: Buffer | null, cipher: CredentialCipher) {
  return {
    usernameTemplate: user === null ? null : cipher.open(user, context(id, 'username_template')),
    passwordTemplate: pass === null ? null : cipher.open(pass, context(id, 'password_template')),
  };
}

/** A record from a row of PACKED_COLUMNS (start-up): credentials decrypted on first read. */
export function recordFromPacked(row: PackedRow, cipher: CredentialCipher): ProxyRecord {
  const [
    id,
    ,
    protocol,
    host,
    port,
    weight,
    country,
    tags,
    createdAt,
    updatedAt,
    userLength,
    passwordLength,
    hex,
    label,
    exitIp,
    exitSeenAt,
    exitCountry,
    exitAsn,
    userTemplate,
    passwordTemplate,
  ] = row;
  const fields = {
    ...templates(id, userTemplate, passwordTemplate, cipher),
    label,
    exit: exitOf(exitIp, exitSeenAt, exitCountry, exitAsn),
    id,
    protocol: knownProtocol(id, protocol),
    host,
    port,
    weight,
    country,
    tags: tagsOf(tags),
    createdAt,
    updatedAt,
  };
  const bytes = hex.length === 0 ? null : Buffer.from(hex, 'hex').toString('latin1');
  return new LoadedRecord(fields, { bytes, userLength, passwordLength }, cipher);
}

/**
 * A record from its row. With `lazy` (start-up: every row), credentials are decrypted on first read;
 * without (one row read back), at once, so that a damaged value fails the read that asked for it.
 */
export function recordFromRow(row: SealedRow, cipher: CredentialCipher, lazy = false): ProxyRecord {
  const fields = {
    ...templates(row.id, row.username_template_enc, row.password_template_enc, cipher),
    label: row.label,
    exit: exitOf(row.exit_ip, row.exit_seen_at, row.exit_country, row.exit_asn),
    id: row.id,
    protocol: knownProtocol(row.id, row.protocol),
    host: row.host,
    port: row.port,
    weight: row.weight,
    country: row.country,
    tags: tagsOf(row.tags),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
  const r = new LoadedRecord(fields, sealedOf(row), cipher);
  if (!lazy) {
    void r.username;
    void r.password;
  }
  return r;
}
