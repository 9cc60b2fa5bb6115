import type { ProxyEntry } from '../pool/pool.ts';
import { IndexedHeap } from './heap.ts';
import { MemberSync, pickRandom, usable } from './shared.ts';
import type { AttemptOutcome, Candidates, SelectionRequest, Strategy } from './types.ts';

/** Share of selections spent on a uniformly random member, so that estimates stay fresh. */
export const EXPLORE_RATE = 0.1;
/** Weight of the newest latency sample in the moving average. */
const ALPHA = 0.3;
/** A proxy-fault failure counts as at least this slow: one that fails fast must not look fast. */
export const FAILURE_PENALTY_MS = 10_000;

interface PerfNode {
  readonly entry: ProxyEntry;
  /** Latency estimate in ms; 0 while untested, so that every member gets measured early. */
  score: number;
  inFlight: number;
  readonly seq: number;
}

function faster(a: PerfNode, b: PerfNode): boolean {
  if (a.score !== b.score) return a.score < b.score;
  if (a.inFlight !== b.inFlight) return a.inFlight < b.inFlight;
  return a.seq < b.seq;
}

/**
 * Epsilon-greedy on recent latency: usually the usable member with the lowest moving-average latency
 * (EWMA), and with probability EXPLORE_RATE a uniformly random usable one. Untested members rank
 * first, so new proxies are measured before the fast one takes over; ties go to fewer in flight.
 */
export class PerformanceBasedStrategy implements Strategy {
  readonly name = 'performance-based' as const;
  private readonly random: () => number;
  private readonly heap = new IndexedHeap<PerfNode>(faster);
  private readonly sync = new MemberSync();
  private readonly ewma = new WeakMap<ProxyEntry, number>();
  private seq = 0;

  constructor(random: () => number) {
    this.random = random;
  }

  /** The current latency estimate in ms, or undefined while untested. */
  latencyEstimate(e: ProxyEntry): number | undefined {
    return this.ewma.get(e);
  }

  select(c: Candidates, req: SelectionRequest): ProxyEntry | null {
    this.ensure(c.members);
    const ok = usable(c, req);
    if (this.random() < EXPLORE_RATE) return pickRandom(c.members, ok, this.random);
    return this.heap.findFirst((n) => ok(n.entry))?.entry ?? null;
  }

  record(e: ProxyEntry, outcome: AttemptOutcome): void {
    const latency = Number.isFinite(outcome.latencyMs) ? Math.max(0, outcome.latencyMs) : FAILURE_PENALTY_MS;
    const sample = !outcome.ok && outcome.proxyFault ? Math.max(latency, FAILURE_PENALTY_MS) : latency;
    const prev = this.ewma.get(e);
    const next = prev === undefined ? sample : prev + ALPHA * (sample - prev);
    this.ewma.set(e, next);
    this.heap.update(e, (n) => {
      n.score = next;
    });
  }

  inFlightChanged(e: ProxyEntry): void {
    this.heap.update(e, (n) => {
      n.inFlight = e.inFlight;
    });
  }

  added(e: ProxyEntry): void {
    if (this.sync.built) this.insert(e);
  }

  removed(e: ProxyEntry): void {
    this.heap.delete(e);
  }

  private insert(e: ProxyEntry): void {
    this.heap.push({ entry: e, score: this.ewma.get(e) ?? 0, inFlight: e.inFlight, seq: this.seq++ });
  }

  private ensure(members: readonly ProxyEntry[]): void {
    if (!this.sync.stale(members, this.heap.size)) return;
    this.heap.clear();
    for (const e of members) this.insert(e);
    this.sync.synced(members);
  }
}
