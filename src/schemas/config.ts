import type { TArray, TObject, TSchema, TString } from 'typebox';
import { checkedByHandler } from './common.ts';
import { corsOriginPattern, NOT_BLANK_PATTERN } from './patterns.ts';

/**
 * `PUT config` as the document states it: each of `cors_origins` is `http(s)://host[:port]`, and `*` only
 * when ROTA_CORS_ALLOW_CREDENTIALS is false, which is what the route checks (400 INVALID_CONFIGURATION).
 * The route's own schema stays the validator; this copy only adds the documented pattern.
 */
export function withCorsOriginPattern<T extends TObject>(update: T, allowCredentials: boolean): T {
  const origins = update.properties.cors_origins as TArray<TString> | undefined;
  if (!origins) return update;
  const wildcard = allowCredentials ? '' : ' or `*`';
  const items: TSchema = {
    ...origins.items,
    ...checkedByHandler(corsOriginPattern(!allowCredentials)),
    description: `An origin, \`http(s)://host[:port]\` with no path${wildcard}`,
  };
  return { ...update, properties: { ...update.properties, cors_origins: { ...origins, items } } };
}

/**
 * `PUT ban-policy` as the document states it: a body pattern must not be blank, which the route checks
 * (400 INVALID_CONFIGURATION, "must not be blank"). The route's own schema stays the validator.
 */
export function withNonBlankPatterns<T extends TObject>(update: T): T {
  const patterns = update.properties.body_patterns as TArray<TString> | undefined;
  if (!patterns) return update;
  const items: TSchema = {
    ...patterns.items,
    ...checkedByHandler(NOT_BLANK_PATTERN),
    description: 'A case-insensitive substring of the first 64 KiB of a body; not blank',
  };
  return { ...update, properties: { ...update.properties, body_patterns: { ...patterns, items } } };
}
