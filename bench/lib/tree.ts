import { readdirSync, readFileSync } from 'node:fs';
import type { Ctx } from './context.ts';
import { ForeignCpuWatch, foreignNote, waitForQuiet } from './cpu.ts';
import { ourPids } from './proc.ts';

/**
 * The harness's processes and every descendant of theirs. bench/lib/proc.ts knows the processes it
 * started; their children (an nginx worker, the workers of a ROTA_WORKERS primary) are ours too, and
 * their CPU must not be taken for another program's.
 */
export function ourTree(): number[] {
  const parent = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const kids = parent.get(ppid) ?? [];
      kids.push(Number(name));
      parent.set(ppid, kids);
    } catch {
      // gone meanwhile
    }
  }
  const out = new Set<number>();
  const stack = ourPids();
  while (stack.length > 0) {
    const pid = stack.pop()!;
    if (out.has(pid)) continue;
    out.add(pid);
    stack.push(...(parent.get(pid) ?? []));
  }
  return [...out];
}

const REDO_ABOVE = 0.1;
const MAX_REDOS = 2;

/**
 * bench/lib/measured.ts's rule with the whole process tree counted as ours: a measured run during which
 * other programs took 10% of the CPU or more is measured again once the machine is quiet (at most twice,
 * never with --quick); the notes say so.
 */
export async function measuredTree<T>(
  o: { readonly ctx: Ctx; readonly label: string; readonly notes: string[] },
  run: () => Promise<T>,
): Promise<T> {
  const shares: number[] = [];
  for (;;) {
    const watch = new ForeignCpuWatch(ourTree);
    let value: T;
    try {
      value = await run();
    } finally {
      shares.push(watch.stop());
    }
    const share = shares.at(-1)!;
    if (share < REDO_ABOVE || o.ctx.quick || shares.length > MAX_REDOS) {
      if (shares.length > 1) {
        const seen = shares.map((s) => `${(s * 100).toFixed(0)}%`).join(', ');
        o.notes.push(
          `${o.label}: measured ${shares.length} times, other programs taking ${seen} of the CPU.`,
        );
      } else o.notes.push(...foreignNote(o.label, share));
      return value;
    }
    o.ctx.log(`  other programs took ${(share * 100).toFixed(0)}% of the CPU: measuring ${o.label} again`);
    await waitForQuiet(120, o.ctx.log);
  }
}
