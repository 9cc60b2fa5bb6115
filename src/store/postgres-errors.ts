/**
 * How the PostgreSQL store tells "the database is unreachable" apart from every other failure: the first
 * becomes a StorageUnavailableError (code STORAGE_UNAVAILABLE, answered 503 by the API), so that an
 * operator and a client see one stable code instead of a driver message, and the rest pass through.
 */
import pg from 'pg';
import { RotaError } from '../errors/rota-error.ts';

/**
 * Rota's STORAGE_UNAVAILABLE, saying what the driver said (for the operator: start-up, the log). The API
 * answers clients with the code's own message (http/error-handler.ts).
 */
export class StorageUnavailableError extends RotaError {
  constructor(cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause);
    super('STORAGE_UNAVAILABLE', `PostgreSQL is unavailable: ${why}`, { cause });
    this.name = 'StorageUnavailableError';
  }
}

// SQLSTATE classes and codes that mean the server or the connection is gone or refusing work, not that
// the statement is wrong: 08 connection exception, 57P0x shutdown, 53 out of resources, 57014 a statement
// cancelled by statement_timeout (the server rolled it back).
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '57P04', '57P05', '57014', '53300', '53100']);

// Node's socket errors and the driver's own messages when a connection cannot be made or was lost.
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENOENT',
]);
const DRIVER_MESSAGES =
  /timeout exceeded when trying to connect|Connection terminated|Query read timeout|not queryable|Client was closed|Cannot use a pool after calling end/i;

export function isUnavailable(e: unknown): boolean {
  if (e instanceof StorageUnavailableError) return true;
  if (e instanceof pg.DatabaseError) {
    const state = e.code ?? '';
    return state.startsWith('08') || UNAVAILABLE_STATES.has(state);
  }
  if (!(e instanceof Error)) return false;
  if (e instanceof AggregateError && e.errors.some(isUnavailable)) return true;
  const code = (e as { code?: unknown }).code;
  return (typeof code === 'string' && NETWORK_CODES.has(code)) || DRIVER_MESSAGES.test(e.message);
}

/** Unique constraint violated: the id or the identity is taken. */
export function isUniqueViolation(e: unknown): boolean {
  return e instanceof pg.DatabaseError && e.code === '23505';
}
