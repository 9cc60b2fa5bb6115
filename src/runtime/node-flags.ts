/**
 * The runtime flags Rota runs with, set by the program itself rather than by whoever starts it.
 *
 *   node dist/main.js ──flags missing?──no──▶ start the server
 *                          │ yes
 *                          ▼
 *   execve(node, [node, <own flags>, <its flags>, dist/main.js, …args])   same pid, same fds and env:
 *                          │                                               the process image is replaced
 *                          ▼                                               before any server code loads
 *   node <flags> dist/main.js ──flags present──▶ start the server
 *
 * Why a re-exec: the young generation's cap is read once, when V8 sets up the heap, so it cannot be
 * changed from inside a running process (v8.setFlagsFromString comes too late for it). Written only into
 * package.json's start script and the Dockerfile's CMD, the flags were lost by anyone running
 * `node dist/main.js` by hand or from a process manager, and the heap trimmer (runtime/heap-trim.ts, which
 * needs --expose-gc) then stopped silently. Those two still pass them (node-flags.test.ts keeps them
 * equal to NODE_FLAGS), so `npm start` and the container skip the re-exec, a second Node boot (15-55 ms
 * of start-up by the machine's speed); anything else gets them by the re-exec. The values were chosen by
 * measurement: idle RSS, peak RSS and throughput under load for each candidate value (README.md,
 * "Benchmarks", gives the trade-off).
 *
 * An operator's own value for one of these flags (on the command line or in NODE_OPTIONS) wins; the
 * others are still added. ROTA_NODE_FLAGS=off leaves the process exactly as it was started. A process
 * with an IPC channel is left alone (its channel would not survive the re-exec): a cluster worker has its
 * primary's flags (these included), the child of `node --watch` is a dev run, and any other (a process
 * manager's fork mode) gets one NODE_FLAGS_MISSING line on stderr saying what to pass.
 */
import { switchWord } from '../lib/switch-words.ts';
import { tricksOff } from './tricks.ts';
export const NODE_FLAGS: readonly string[] = [
  // Young generation at most 16 MB per semi-space: V8's default (32 MB on 64-bit) adds RSS at every
  // peak for no measurable throughput here.
  '--max-semi-space-size=16',
  // For the heap trimmer's memory-reducing GC.
  '--expose-gc',
  // The old generation grows its limit by half instead of V8's default factor: lower peaks under load.
  '--heap-growing-percent=50',
];

/** `--max_semi_space_size=32` and `--max-semi-space-size` both name `max-semi-space-size`. */
function flagName(arg: string): string {
  return arg.replace(/^--?/, '').split('=')[0]?.replaceAll('_', '-') ?? '';
}

/** The flags of NODE_FLAGS that neither the command line nor NODE_OPTIONS names. */
export function missingFlags(execArgv: readonly string[], nodeOptions: string | undefined): string[] {
  const given = new Set([...execArgv, ...(nodeOptions ?? '').split(/\s+/)].filter(Boolean).map(flagName));
  return NODE_FLAGS.filter((f) => !given.has(flagName(f)));
}

export interface ReexecProcess {
  readonly execPath: string;
  readonly execArgv: readonly string[];
  readonly argv: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly send?: unknown;
  readonly execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never;
}

/** Marks a re-executed process, so that a runtime that dropped the flags cannot loop. */
const REEXEC_MARK = 'ROTA_NODE_FLAGS_REEXEC';

export type FlagsDecision =
  | { readonly kind: 'keep'; readonly why: 'complete' | 'off' | 'ipc' | 'reexecuted' }
  | {
      readonly kind: 'unsupported';
      readonly missing: readonly string[];
      /** ipc: started by a process manager with an IPC channel (PM2's fork mode, say); no-execve: the platform. */
      readonly why: 'ipc' | 'no-execve';
    }
  | { readonly kind: 'reexec'; readonly args: string[]; readonly env: NodeJS.ProcessEnv };

export function decideFlags(p: ReexecProcess): FlagsDecision {
  // The config reader's false words leave the process as started.
  if (
    switchWord(p.env.ROTA_NODE_FLAGS ?? '') === 'off' ||
    tricksOff(p.env.ROTA_RUNTIME_OFF).has('node-flags')
  )
    return { kind: 'keep', why: 'off' };
  const missing = missingFlags(p.execArgv, p.env.NODE_OPTIONS);
  if (missing.length === 0) return { kind: 'keep', why: 'complete' };
  if (p.send !== undefined) {
    // A cluster worker has its primary's flags (Rota's included); node --watch's child is a dev run.
    if (p.env.NODE_UNIQUE_ID !== undefined || p.env.WATCH_REPORT_DEPENDENCIES !== undefined)
      return { kind: 'keep', why: 'ipc' };
    return { kind: 'unsupported', missing, why: 'ipc' };
  }
  if (p.env[REEXEC_MARK] === '1') return { kind: 'keep', why: 'reexecuted' };
  if (typeof p.execve !== 'function') return { kind: 'unsupported', missing, why: 'no-execve' };
  return {
    kind: 'reexec',
    args: [p.execPath, ...p.execArgv, ...missing, ...p.argv.slice(1)],
    env: { ...p.env, [REEXEC_MARK]: '1' },
  };
}

/**
 * Replaces this process with one that has Rota's flags when some are missing; returns when nothing is
 * to be done (or cannot be: a platform without execve gets one line on stderr and runs as started).
 */
export function ensureNodeFlags(p: ReexecProcess = process as ReexecProcess): void {
  const d = decideFlags(p);
  if (d.kind === 'reexec') p.execve?.(p.execPath, d.args, d.env);
  else if (d.kind === 'unsupported') {
    const why =
      d.why === 'ipc'
        ? 'started with an IPC channel, which a re-executed process would lose'
        : 'this platform cannot re-execute a process';
    process.stderr.write(
      `NODE_FLAGS_MISSING running without ${d.missing.join(' ')} (${why}); pass them to node, or set ROTA_NODE_FLAGS=off\n`,
    );
  }
}
