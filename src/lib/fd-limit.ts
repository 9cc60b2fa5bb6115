import { readFileSync } from 'node:fs';

/**
 * The process's open-file limit (RLIMIT_NOFILE), read from /proc/self/limits.
 *
 * Node raises the soft limit to the hard one itself when it starts on Linux and macOS (its platform
 * initialisation, before any JavaScript runs), so there is nothing to raise here; Rota reads the limit to
 * size ROTA_MAX_CONNECTIONS and says it in the start-up log. test/security-flood.test.ts checks the raise
 * on a server started with a soft limit below its hard one.
 */

export interface FdLimit {
  readonly soft: number;
  readonly hard: number;
}

/** `Max open files  <soft>  <hard>  files`; "unlimited" is Infinity. Null when the line is not there. */
export function parseFdLimit(limits: string): FdLimit | null {
  const m = /^Max open files\s+(\S+)\s+(\S+)/m.exec(limits);
  if (!m) return null;
  const value = (s: string) => (s === 'unlimited' ? Number.POSITIVE_INFINITY : Number(s));
  const soft = value(m[1]!);
  const hard = value(m[2]!);
  return Number.isNaN(soft) || Number.isNaN(hard) ? null : { soft, hard };
}

/** This process's limit; null where /proc is not there (not Linux). */
export function readFdLimit(path = '/proc/self/limits'): FdLimit | null {
  try {
    return parseFdLimit(readFileSync(path, 'utf8'));
  } catch {
    return null;
  }
}

/** Where the limit cannot be read. */
export const FALLBACK_MAX_CONNECTIONS = 4096;

/**
 * ROTA_MAX_CONNECTIONS when not set: half the soft limit, so that each client connection leaves a
 * descriptor for its upstream socket (and some for storage, logs and the API).
 */
export function defaultMaxConnections(limit: FdLimit | null): number {
  if (limit === null || !Number.isFinite(limit.soft)) return FALLBACK_MAX_CONNECTIONS;
  return Math.max(1, Math.floor(limit.soft / 2));
}
