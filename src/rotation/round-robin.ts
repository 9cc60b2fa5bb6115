import type { ProxyEntry } from '../pool/pool.ts';
import { RoundRobinCursor, usable } from './shared.ts';
import type { Candidates, SelectionRequest, Strategy } from './types.ts';

/** Each usable member in creation order, one per call; ineligible members are stepped over. */
export class RoundRobinStrategy implements Strategy {
  readonly name = 'round-robin' as const;
  private readonly cursor = new RoundRobinCursor();

  select(c: Candidates, req: SelectionRequest): ProxyEntry | null {
    return this.cursor.next(c.members, usable(c, req));
  }
}
