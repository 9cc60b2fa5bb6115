import type { ProxyEntry } from '../pool/pool.ts';
import { pickRandom, usable } from './shared.ts';
import type { Candidates, SelectionRequest, Strategy } from './types.ts';

/** Uniform over the usable members. */
export class RandomStrategy implements Strategy {
  readonly name = 'random' as const;
  private readonly random: () => number;

  constructor(random: () => number) {
    this.random = random;
  }

  select(c: Candidates, req: SelectionRequest): ProxyEntry | null {
    return pickRandom(c.members, usable(c, req), this.random);
  }
}
