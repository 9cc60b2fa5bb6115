import type { Target } from './fixtures.ts';
import type { Squid } from './squid.ts';

/** What every workload gets from run.ts: the shared fixtures and the run's durations. */
export interface Ctx {
  readonly quick: boolean;
  readonly workDir: string;
  readonly target: Target;
  /** null when squid could not start: workloads that need it report why instead of figures. */
  readonly squid: Squid | null;
  readonly squidError: string;
  /** Length of each measured load run (20 s; a few seconds with --quick). */
  readonly loadS: number;
  /** Unmeasured run before each measured one, the same for every subject (JIT, connection pools). */
  readonly warmS: number;
  /** Proxies in the pool-scale workload (100,000; fewer with --quick). */
  readonly scaleProxies: number;
  /** Node flags for every Rota started (`--profile` adds --cpu-prof into bench/.work/profiles). */
  readonly rotaNodeFlags: readonly string[];
  log(message: string): void;
}
