import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePorts, type Proc, sleep, startProcess } from './proc.ts';
import { benchEnv, ROOT, type Rota, START_FLAGS, scrape, sumMetric } from './rota.ts';

/**
 * Rota as `npm start` runs it once built: `node <its flags> dist/main.js` (package.json "start", which
 * src/lib/node-flags.test.ts keeps equal to NODE_FLAGS), spawned directly (no scripts/with-node.sh, no build check, so the
 * time to ready is Rota's own), with the set-up of the other workloads (production mode, auth off,
 * loopback targets allowed, generous limits) and both listeners on free ports, as `npm start` has them.
 */
export { GROWTH_FLAG, START_FLAGS } from './rota.ts';

export interface ProdOptions {
  readonly name: string;
  readonly workDir: string;
  /**
   * 'own': Rota's own flags on the command line, as `npm start` and the container pass them. 'reexec':
   * none, so Rota re-executes itself with them (as `node dist/main.js` by hand; the re-exec counted in
   * the start-up time). A list: exactly these flags (ROTA_NODE_FLAGS=off), for the variants that compare
   * them.
   */
  readonly flags: readonly string[] | 'own' | 'reexec';
  /** dist/main.js (default), or src/main.ts for the sources as the other workloads run them. */
  readonly script?: string;
  readonly env?: Readonly<Record<string, string>>;
}

export async function startRotaProd(o: ProdOptions): Promise<Rota> {
  const [port = 0, proxyPort, socksPort] = await freePorts(3);
  const env = benchEnv(port, {
    ROTA_PROXY_PORT: String(proxyPort),
    ROTA_SOCKS_PORT: String(socksPort),
    ...(typeof o.flags === 'string' ? {} : { ROTA_NODE_FLAGS: 'off' }),
    ...o.env,
  });
  const t0 = performance.now();
  const proc = startProcess(
    `rota-${o.name}`,
    process.execPath,
    [...nodeArgs(o.flags), o.script ?? 'dist/main.js'],
    {
      cwd: ROOT,
      env,
      logPath: join(o.workDir, 'logs', `rota-${o.name}.log`),
    },
  );
  const base = `http://127.0.0.1:${port}`;
  for (;;) {
    if (proc.hasExited())
      throw new Error(`Rota exited during start-up (${await proc.exited}): see ${proc.logPath}`);
    if (performance.now() - t0 > 60_000) {
      await proc.stop();
      throw new Error(`Rota was not ready within 60 s: see ${proc.logPath}`);
    }
    const status = await fetch(`${base}/api/v1/ready`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) break;
    await sleep(5);
  }
  return { base, proc, readyMs: performance.now() - t0, stop: () => proc.stop() };
}

function nodeArgs(flags: ProdOptions['flags']): readonly string[] {
  if (flags === 'own') return START_FLAGS;
  return flags === 'reexec' ? [] : flags;
}

/** An empty Node process (`node -e 'setInterval(()=>{},1e9)'`): what any Node program starts from. */
export async function startBareNode(workDir: string): Promise<Proc> {
  const proc = startProcess('bare-node', process.execPath, ['-e', 'setInterval(()=>{},1e9)'], {
    logPath: join(workDir, 'logs', 'bare-node.log'),
  });
  await sleep(1_000);
  if (proc.hasExited()) throw new Error(`the bare node process exited: see ${proc.logPath}`);
  return proc;
}

export interface Resident {
  readonly rssMb: number;
  /** Anonymous memory (heaps, malloc, stacks). */
  readonly anonMb: number;
  /** Pages mapped from files (the node binary, shared libraries, native add-ons). */
  readonly fileMb: number;
}

/** RSS split from /proc/<pid>/smaps_rollup. */
export function resident(pid: number): Resident {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? 0);
  const rss = kb('Rss') / 1024;
  const anon = kb('Anonymous') / 1024;
  return { rssMb: rss, anonMb: anon, fileMb: rss - anon };
}

export interface Heap {
  /** V8 heap committed (prom-client's nodejs_heap_size_total_bytes, v8.getHeapStatistics). */
  readonly committedMb: number;
  readonly usedMb: number;
  /** Young generation committed (heap space "new"). */
  readonly newSpaceMb: number;
  readonly externalMb: number;
}

/** V8's heap figures from Rota's own /metrics (prom-client's default process metrics, prefix rota_). */
export async function heapOf(base: string): Promise<Heap> {
  const text = await scrape(base);
  const mb = (name: string, label?: { name: string; value: string }) =>
    sumMetric(text, name, label) / 2 ** 20;
  return {
    committedMb: mb('rota_nodejs_heap_size_total_bytes'),
    usedMb: mb('rota_nodejs_heap_size_used_bytes'),
    newSpaceMb: mb('rota_nodejs_heap_space_size_total_bytes', { name: 'space', value: 'new' }),
    externalMb: mb('rota_nodejs_external_memory_bytes'),
  };
}
