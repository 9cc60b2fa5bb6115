import { randomUUID } from 'node:crypto';
import type { ProxyRecord } from '../../src/pool/types.ts';

let clock = 1_700_000_000_000;

/** Test records for the store tests: a fresh id and a later timestamp than the previous one. */
export function rec(o: Partial<ProxyRecord> = {}): ProxyRecord {
  clock += 1;
  return {
    id: randomUUID(),
    protocol: 'http',
    host: 'proxy.example.com',
    port: 3128,
    username: null,
    password: null,
    weight: 1,
    country: null,
    tags: [],
    createdAt: clock,
    updatedAt: clock,
    ...o,
  };
}

/** A record's fields as a plain object: loaded records keep credentials behind getters (rows.ts). */
export function plain(r: ProxyRecord): ProxyRecord;
export function plain(r: ProxyRecord | null): ProxyRecord | null;
export function plain(r: ProxyRecord | null): ProxyRecord | null {
  if (r === null) return null;
  return {
    id: r.id,
    protocol: r.protocol,
    host: r.host,
    port: r.port,
    username: r.username,
    password: r.password,
    weight: r.weight,
    country: r.country,
    tags: [...r.tags],
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}
