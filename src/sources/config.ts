/**
 * What a proxy source is (name, URL, format, protocol of bare lines, refresh period, whether new proxies
 * are health-checked first, headers sent with each fetch), the checks `PUT sources` makes beyond the
 * schema, and how the list is kept in the store (one setting, like the retry policy; header values
 * sealed with the credentials' key, see headers.ts).
 */
import { type Static, Type } from 'typebox';
import { maskProxyLine, redactText } from '../audit/redact.ts';
import type { DetailItem } from '../errors/rota-error.ts';
import { matchesSchema } from '../lib/schema-check.ts';
import { PROTOCOLS, type Protocol } from '../pool/types.ts';
import type { SsrfGuard } from '../ssrf/guard.ts';
import type { ProxyStore } from '../store/types.ts';
import {
  headerProblems,
  openHeaders,
  SourceHeadersInput,
  SourceHeadersShown,
  SourceHeadersStored,
  sealHeaders,
  shownHeaders,
} from './headers.ts';

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
  url: Type.String({
    minLength: 1,
    maxLength: 2048,
    description: 'http(s); the SSRF rules apply. Shown with query values masked (`?token=***`)',
  }),
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

/** One source as shown: header names only, each value `***`; the URL's query values masked. */
export const SourceConfigSchema = Type.Object(
  { ...fields, headers: SourceHeadersShown },
  { additionalProperties: false },
);
/** One source as Rota runs it: the real URL and header values, never answered or logged. */
export type SourceConfig = Static<typeof SourceConfigSchema>;

/** One source as stored: header values sealed; a list stored before headers existed has none. */
const StoredSourceSchema = Type.Object(
  { ...fields, headers: Type.Optional(SourceHeadersStored) },
  { additionalProperties: false },
);
type StoredSource = Static<typeof StoredSourceSchema>;

/** One source as `PUT sources` takes it: only name and url are required. */
export const SourceInputSchema = Type.Object(
  {
    name: fields.name,
    url: fields.url,
    format: Type.Optional(fields.format),
    protocol: Type.Optional(fields.protocol),
    refresh_s: Type.Optional(fields.refresh_s),
    validate: Type.Optional(fields.validate),
    headers: Type.Optional(SourceHeadersInput),
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
    headers: { ...s.headers },
  };
}

/** A source as answered: the URL's user-info, query values and fragment masked, header values `***`. */
export function shownSource(config: SourceConfig): SourceConfig {
  return { ...config, url: maskProxyLine(config.url), headers: shownHeaders(config.headers) };
}

function problem(loc: (string | number)[], msg: string, input: unknown): DetailItem {
  return { loc: ['body', ...loc], msg, type: 'value_error', input, ctx: {} };
}

/**
 * What the schema cannot say: names unique, URLs http(s) and not refused by the SSRF rules (a host that
 * does not resolve now is accepted: it may later, and each fetch checks again).
 */
export async function sourceProblems(
  body: unknown,
  ssrf: SsrfGuard,
  current: readonly SourceConfig[],
): Promise<DetailItem[]> {
  if (!Array.isArray(body)) return [];
  const out: DetailItem[] = body.flatMap((s: unknown, i) => headerProblems(s, i, current));
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

/**
 * The stored list; entries a newer or older Rota wrote that are not valid now, or whose header values do
 * not open with this key, are skipped.
 */
export async function loadSources(store: ProxyStore): Promise<{ sources: SourceConfig[]; skipped: number }> {
  const saved = await store.getSetting(SOURCES_SETTING);
  if (!Array.isArray(saved)) return { sources: [], skipped: 0 };
  const sources: SourceConfig[] = [];
  for (const s of saved) {
    if (!matchesSchema(StoredSourceSchema, s)) continue;
    const stored = s as StoredSource;
    const headers = openHeaders(store, stored.name, stored.headers ?? {});
    if (headers !== null) sources.push({ ...stored, headers });
  }
  return { sources, skipped: saved.length - sources.length };
}

export function saveSources(store: ProxyStore, sources: readonly SourceConfig[]): Promise<void> {
  const stored: StoredSource[] = sources.map(({ headers, ...rest }) =>
    Object.keys(headers).length === 0 ? rest : { ...rest, headers: sealHeaders(store, rest.name, headers) },
  );
  return store.putSetting(SOURCES_SETTING, stored);
}
