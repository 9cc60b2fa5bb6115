import type { ProxyEntry } from '../pool/pool.ts';
import { IndexedHeap } from './heap.ts';
import { MemberSync, usable } from './shared.ts';
import type { Candidates, SelectionRequest, Strategy } from './types.ts';

interface LoadNode {
  readonly entry: ProxyEntry;
  inFlight: number;
  total: number;
  /** Creation order breaks ties, so that equal members are taken in a stable order. */
  readonly seq: number;
}

function lighter(a: LoadNode, b: LoadNode): boolean {
  if (a.inFlight !== b.inFlight) return a.inFlight < b.inFlight;
  if (a.total !== b.total) return a.total < b.total;
  return a.seq < b.seq;
}

/**
 * The usable member with the fewest requests in flight, then the fewest in total. A heap keyed on
 * (inFlight, total) is kept current by `inFlightChanged` and `record`, so a selection reads the top
 * and walks down only past members that are not usable now.
 */
export class LeastUsedStrategy implements Strategy {
  readonly name = 'least-used' as const;
  private readonly heap = new IndexedHeap<LoadNode>(lighter);
  private readonly sync = new MemberSync();
  private seq = 0;

  select(c: Candidates, req: SelectionRequest): ProxyEntry | null {
    this.ensure(c.members);
    const ok = usable(c, req);
    return this.heap.findFirst((n) => ok(n.entry))?.entry ?? null;
  }

  inFlightChanged(e: ProxyEntry): void {
    this.refresh(e);
  }

  record(e: ProxyEntry): void {
    this.refresh(e);
  }

  added(e: ProxyEntry): void {
    if (this.sync.built) this.insert(e);
  }

  removed(e: ProxyEntry): void {
    this.heap.delete(e);
  }

  private refresh(e: ProxyEntry): void {
    this.heap.update(e, (n) => {
      n.inFlight = e.inFlight;
      n.total = e.stats.total;
    });
  }

  private insert(e: ProxyEntry): void {
    this.heap.push({ entry: e, inFlight: e.inFlight, total: e.stats.total, seq: this.seq++ });
  }

  private ensure(members: readonly ProxyEntry[]): void {
    if (!this.sync.stale(members, this.heap.size)) return;
    this.heap.clear();
    for (const e of members) this.insert(e);
    this.sync.synced(members);
  }
}
