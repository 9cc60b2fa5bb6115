import { randomUUID } from 'node:crypto';
import { RotaError } from '../errors/rota-error.ts';
import type { AddProxyInput, ProxyPatch } from './entry.ts';
import { parseProxyUrl } from './proxy-url.ts';
import type { ProxyRecord } from './types.ts';

/** A new proxy's record from what a caller gave (POST proxies, import, sources): parsed and checked. */
export function buildRecord(input: AddProxyInput, now: number): ProxyRecord {
  const parsed = parseProxyUrl(input.url);
  if (!parsed.ok) {
    throw new RotaError('INVALID_PROXY_FORMAT', `Invalid proxy URL: ${parsed.reason}`, {
      details: { reason: parsed.reason },
      detail: [{ loc: ['body', 'url'], msg: parsed.reason, type: 'value_error', input: '***', ctx: {} }],
    });
  }
  const p = parsed.value;
  if ((input.username !== undefined || input.password !== undefined) && (p.username || p.password)) {
    const reason = 'credentials given both in the URL and as fields';
    throw new RotaError('INVALID_PROXY_FORMAT', `Invalid proxy URL: ${reason}`, {
      details: { reason },
      detail: [{ loc: ['body', 'url'], msg: reason, type: 'value_error', input: '***', ctx: {} }],
    });
  }
  return {
    id: randomUUID(),
    protocol: p.protocol,
    host: p.host,
    port: p.port,
    username: input.username || p.username,
    password: input.password || p.password,
    weight: input.weight ?? 1,
    country: input.country ? input.country.toUpperCase() : null,
    tags: input.tags ?? [],
    createdAt: now,
    updatedAt: now,
    label: input.label || null,
    usernameTemplate: input.username_template || null,
    passwordTemplate: input.password_template || null,
  };
}

/** `key` of the patch when given (null clears it), else the record's. */
function pick<T>(patch: ProxyPatch, key: keyof ProxyPatch, old: T): T {
  return key in patch && patch[key] !== undefined ? (patch[key] as T) : old;
}

/**
 * The record after a PATCH: the same id, address and creation time (its exit lives on the entry);
 * weight, country, tags, label, credentials and templates as the patch says. Reads (so decrypts) the old
 * credentials it keeps.
 */
export function patchRecord(old: ProxyRecord, patch: ProxyPatch, now: number): ProxyRecord {
  const country = pick<string | null>(patch, 'country', old.country);
  return {
    id: old.id,
    protocol: old.protocol,
    host: old.host,
    port: old.port,
    username: pick(patch, 'username', old.username) || null,
    password: pick(patch, 'password', old.password) || null,
    weight: pick(patch, 'weight', old.weight),
    country: country ? country.toUpperCase() : null,
    tags: [...pick(patch, 'tags', old.tags)],
    createdAt: old.createdAt,
    updatedAt: Math.max(now, old.updatedAt),
    label: pick(patch, 'label', old.label ?? null) || null,
    usernameTemplate: pick(patch, 'username_template', old.usernameTemplate ?? null) || null,
    passwordTemplate: pick(patch, 'password_template', old.passwordTemplate ?? null) || null,
  };
}

/** The record, or why the input is not a valid proxy (never with its credentials). */
export function tryBuild(input: AddProxyInput, now: number): ProxyRecord | string {
  try {
    return buildRecord(input, now);
  } catch (err) {
    if (!(err instanceof RotaError)) throw err;
    const details = err.details as { reason?: unknown } | null;
    return typeof details?.reason === 'string' ? details.reason : 'invalid proxy';
  }
}
