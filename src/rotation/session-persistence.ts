import type { ProxyEntry } from '../pool/pool.ts';
import { RoundRobinCursor, usable } from './shared.ts';
import type { Candidates, SelectionRequest, Strategy } from './types.ts';

/**
 * `session-persistence`: round-robin for picks without a session. A `session_id` is sticky under every
 * strategy, so the pinning itself lives in the one session table that the Selector consults
 * before any strategy (sessions.ts); this strategy keeps its name for configurations that use it.
 */
export class SessionPersistenceStrategy implements Strategy {
  readonly name = 'session-persistence' as const;
  private readonly cursor = new RoundRobinCursor();

  select(c: Candidates, req: SelectionRequest): ProxyEntry | null {
    return this.cursor.next(c.members, usable(c, req));
  }
}
