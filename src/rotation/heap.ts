import type { ProxyEntry } from '../pool/pool.ts';

export interface HeapNode {
  readonly entry: ProxyEntry;
}

/**
 * A binary min-heap of pool members with a position map, so that a member's key can change
 * (`update`) or the member can leave (`delete`) in O(log n). Nodes hold their own copy of the keys,
 * refreshed on `update`: a member whose live counters moved without a notification cannot break the
 * heap order, it is only ranked by slightly old numbers.
 */
export class IndexedHeap<N extends HeapNode> {
  private readonly nodes: N[] = [];
  private readonly pos = new Map<ProxyEntry, number>();
  private readonly less: (a: N, b: N) => boolean;

  constructor(less: (a: N, b: N) => boolean) {
    this.less = less;
  }

  get size(): number {
    return this.nodes.length;
  }

  has(e: ProxyEntry): boolean {
    return this.pos.has(e);
  }

  clear(): void {
    this.nodes.length = 0;
    this.pos.clear();
  }

  push(node: N): void {
    if (this.pos.has(node.entry)) return;
    this.nodes.push(node);
    this.pos.set(node.entry, this.nodes.length - 1);
    this.up(this.nodes.length - 1);
  }

  /** Changes a member's keys in place, then restores the heap order. */
  update(e: ProxyEntry, change: (n: N) => void): void {
    const i = this.pos.get(e);
    if (i === undefined) return;
    const node = this.nodes[i];
    if (node === undefined) return;
    change(node);
    this.up(i);
    this.down(this.pos.get(e) ?? i);
  }

  delete(e: ProxyEntry): void {
    const i = this.pos.get(e);
    if (i === undefined) return;
    this.pos.delete(e);
    const tail = this.nodes.pop();
    if (tail === undefined || i === this.nodes.length) return;
    this.nodes[i] = tail;
    this.pos.set(tail.entry, i);
    this.up(i);
    this.down(this.pos.get(tail.entry) ?? i);
  }

  /**
   * The least node that satisfies `ok`, without changing the heap: a best-first walk from the root
   * with a small frontier heap. It visits only the nodes that rank better than the answer (and their
   * children), so it costs O(1) while the best members are usable.
   */
  findFirst(ok: (n: N) => boolean): N | null {
    const frontier = new IndexedFrontier((a, b) => this.lessAt(a, b));
    if (this.nodes.length > 0) frontier.push(0);
    for (let i = frontier.pop(); i !== undefined; i = frontier.pop()) {
      const node = this.nodes[i];
      if (node !== undefined && ok(node)) return node;
      if (2 * i + 1 < this.nodes.length) frontier.push(2 * i + 1);
      if (2 * i + 2 < this.nodes.length) frontier.push(2 * i + 2);
    }
    return null;
  }

  private lessAt(i: number, j: number): boolean {
    const a = this.nodes[i];
    const b = this.nodes[j];
    return a !== undefined && b !== undefined && this.less(a, b);
  }

  private swap(i: number, j: number): void {
    const a = this.nodes[i];
    const b = this.nodes[j];
    if (a === undefined || b === undefined) return;
    this.nodes[i] = b;
    this.nodes[j] = a;
    this.pos.set(b.entry, i);
    this.pos.set(a.entry, j);
  }

  private up(i: number): void {
    let k = i;
    while (k > 0) {
      const parent = (k - 1) >> 1;
      if (!this.lessAt(k, parent)) return;
      this.swap(k, parent);
      k = parent;
    }
  }

  private down(i: number): void {
    let k = i;
    for (;;) {
      const l = 2 * k + 1;
      const r = l + 1;
      let best = k;
      if (l < this.nodes.length && this.lessAt(l, best)) best = l;
      if (r < this.nodes.length && this.lessAt(r, best)) best = r;
      if (best === k) return;
      this.swap(k, best);
      k = best;
    }
  }
}

/** A plain binary heap of node indices, ordered by the nodes they point at. */
class IndexedFrontier {
  private readonly items: number[] = [];
  private readonly less: (a: number, b: number) => boolean;

  constructor(less: (a: number, b: number) => boolean) {
    this.less = less;
  }

  push(v: number): void {
    const items = this.items;
    items.push(v);
    let k = items.length - 1;
    while (k > 0) {
      const parent = (k - 1) >> 1;
      const a = items[k] ?? 0;
      const b = items[parent] ?? 0;
      if (!this.less(a, b)) return;
      items[k] = b;
      items[parent] = a;
      k = parent;
    }
  }

  pop(): number | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return top;
    items[0] = last;
    let k = 0;
    for (;;) {
      const l = 2 * k + 1;
      let best = k;
      if (l < items.length && this.less(items[l] ?? 0, items[best] ?? 0)) best = l;
      if (l + 1 < items.length && this.less(items[l + 1] ?? 0, items[best] ?? 0)) best = l + 1;
      if (best === k) return top;
      const a = items[k] ?? 0;
      items[k] = items[best] ?? 0;
      items[best] = a;
      k = best;
    }
  }
}
