/**
 * The answer of `POST /api/v1/proxies/import` (http/routes/import.ts). The dashboard (web/src/types.ts)
 * takes its type from here with `import type`, so this module must stay free of Node's modules and types.
 */
import { type Static, Type } from 'typebox';

/** At most this many invalid lines are listed in an answer. */
export const MAX_INVALID_LISTED = 100;

export const ImportSummarySchema = Type.Object({
  created: Type.Integer({ description: 'Proxies added' }),
  duplicates: Type.Integer({ description: 'Lines repeating an earlier line or a proxy already in the pool' }),
  invalid: Type.Array(
    Type.Object({
      line: Type.Integer({ minimum: 1, description: 'Counting every line from 1' }),
      reason: Type.String(),
    }),
    { maxItems: MAX_INVALID_LISTED, description: `The first ${MAX_INVALID_LISTED} invalid lines` },
  ),
  invalid_count: Type.Integer({ description: 'Every invalid line, listed or not' }),
});

export type ImportSummary = Static<typeof ImportSummarySchema>;
