/**
 * What a proxy source is (name, URL, format, protocol of bare lines, refresh period, whether new proxies
 * are health-checked first), the checks `PUT sources` makes beyond the schema, and how the list is kept
 * in the store (one setting, like the retry policy).
 */
import { type Static, Type } from 'typebox';
import { redactText } from '../audit/redact.ts';
import type { DetailItem } from '../http/errors.ts';
import { matchesSchema } from '../lib/schema-check.ts';
import { PROTOCOLS, type Protocol } from '../pool/types.ts';
import type { SsrfGuard } from '../ssrf/guard.ts';
import type { ProxyStore } from '../store/types.ts';

export const SOURCE_FORMATS = ['text', 'csv', 'json'] as const;
export type SourceFormat = (typeof SOURCE_FORMATS)[number];

/** The store setting holding the list. */
export const SOURCES_SETTING = 'proxy_sources';
export const MAX_SOURCES = 50;

const fields = {
  name: Type.String({
    pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$',
    description: 'Unique; its proxies are tagged source:NAME',
  }),
  url: Type.String({ minLength: 1, maxLength: 2048, description: 'http(s); the SSRF rules apply' }),
  format: Type.Enum([...SOURCE_FORMATS], {
    default: 'text',
    description: 'text: a proxy per line; csv: a header row (host/ip, port, ...); json: an array',
  }),
  protocol: Type.Enum([...PROTOCOLS], { default: 'http', description: 'Scheme of entries without one' }),
  refresh_s: Type.Integer({
    minimum: 1,
    maximum: 604_800,
    default: 3600,
    description: 'Seconds between fetches',
  }),
  validate: Type.Boolean({
    default: true,
    description: 'Health-check new proxies before they join the pool',
  }),
};

/** One source as stored and shown. */
export const SourceConfigSchema = Type.Object(fields, { additionalProperties: false });
export type SourceConfig = Static<typeof SourceConfigSchema>;

/** One source as `PUT sources` takes it: only name and url are required. */
export const SourceInputSchema = Type.Object(
  {
    name: fields.name,
    url: fields.url,
    format: Type.Optional(fields.format),
    protocol: Type.Optional(fields.protocol),
    refresh_s: Type.Optional(fields.refresh_s),
    validate: Type.Optional(fields.validate),
  },
  { additionalProperties: false },
);
export type SourceInput = Static<typeof SourceInputSchema>;

export const SourceListInputSchema = Type.Array(SourceInputSchema, {
  maxItems: MAX_SOURCES,
  description: 'The whole list: it replaces the current one',
});

export function normalize(s: SourceInput): SourceConfig {
  return {
    name: s.name,
    url: s.url,
    format: (s.format ?? 'text') as SourceFormat,
    protocol: (s.protocol ?? 'http') as Protocol,
    refresh_s: s.refresh_s ?? 3600,
    validate: s.validate ?? true,
  };
}

function problem(loc: (string | number)[], msg: string, input: unknown): DetailItem {
  return { loc: ['body', ...loc], msg, type: 'value_error', input, ctx: {} };
}

/**
 * What the schema cannot say: names unique, URLs http(s) and not refused by the SSRF rules (a host that
 * does not resolve now is accepted: it may later, and each fetch checks again).
 */
export async function sourceProblems(body: unknown, ssrf: SsrfGuard): Promise<DetailItem[]> {
  if (!Array.isArray(body)) return [];
  const out: DetailItem[] = [];
  const names = new Map<string, number>();
  const checks = body.map(async (s: unknown, i) => {
    if (s === null || typeof s !== 'object') return;
    const { name, url } = s as { name?: unknown; url?: unknown };
    if (typeof name === 'string') {
      const key = name.toLowerCase();
      if (names.has(key))
        out.push(problem([i, 'name'], `Repeats the name of source ${names.get(key)}`, name));
      else names.set(key, i);
    }
    if (typeof url !== 'string' || url.length > 2048) return;
    const verdict = await ssrf.check(url);
    if (!verdict.ok && verdict.reason !== 'unresolvable') {
      out.push(problem([i, 'url'], `Refused by the SSRF rules: ${verdict.message}`, redactText(url)));
    }
  });
  await Promise.all(checks);
  return out.sort((a, b) => Number(a.loc[1]) - Number(b.loc[1]));
}

/** The stored list; entries a newer or older Rota wrote that are not valid now are skipped. */
export async function loadSources(store: ProxyStore): Promise<{ sources: SourceConfig[]; skipped: number }> {
  const saved = await store.getSetting(SOURCES_SETTING);
  if (!Array.isArray(saved)) return { sources: [], skipped: 0 };
  const sources = saved.filter((s): s is SourceConfig => matchesSchema(SourceConfigSchema, s));
  return { sources, skipped: saved.length - sources.length };
}

export function saveSources(store: ProxyStore, sources: readonly SourceConfig[]): Promise<void> {
  return store.putSetting(SOURCES_SETTING, sources);
}
