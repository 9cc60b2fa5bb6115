/**
 * From a parsed list to the pool in one store transaction (Pool.addMany), and the summary both bulk
 * import and proxy sources report: created, duplicates, and the invalid lines (at most 100 listed).
 */
import type { AddProxyInput, Pool, ProxyEntry } from '../pool/pool.ts';
import { MAX_INVALID_LISTED } from '../schemas/import.ts';
import type { Invalid, ParsedList } from './lines.ts';

export interface ImportSummary {
  created: number;
  duplicates: number;
  /** The first invalid lines, in line order, at most MAX_INVALID_LISTED. */
  invalid: Invalid[];
  /** Every invalid line, listed or not. */
  invalid_count: number;
}

export interface ImportResult {
  readonly summary: ImportSummary;
  readonly entries: ProxyEntry[];
}

/** Adds what the list holds (with `tags` added to each input's own); nothing is stored on a failure. */
export async function importList(
  pool: Pool,
  list: ParsedList,
  tags: readonly string[] = [],
): Promise<ImportResult> {
  const inputs: AddProxyInput[] = list.candidates.map(({ input }) =>
    tags.length === 0 ? input : { ...input, tags: [...new Set([...(input.tags ?? []), ...tags])] },
  );
  const outcomes = await pool.addMany(inputs);
  const invalid: Invalid[] = [...list.invalid];
  const entries: ProxyEntry[] = [];
  let duplicates = 0;
  outcomes.forEach((o, i) => {
    if (o.kind === 'created') entries.push(o.entry);
    else if (o.kind === 'duplicate') duplicates++;
    else invalid.push({ line: list.candidates[i]?.line ?? 0, reason: o.reason });
  });
  invalid.sort((a, b) => a.line - b.line);
  return {
    summary: {
      created: entries.length,
      duplicates,
      invalid: invalid.slice(0, MAX_INVALID_LISTED),
      invalid_count: invalid.length,
    },
    entries,
  };
}
