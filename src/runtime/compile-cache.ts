/**
 * V8's compiled code for the modules Rota loads, kept on disk between runs (node:module's compile cache).
 *
 *   main.js ──ROTA_COMPILE_CACHE=off?──yes──▶ compile every module from source (as before)
 *              │ no
 *              ▼
 *   private folder? (ours, 0700, not a link) ──no──▶ one COMPILE_CACHE_SKIPPED line; compile from source
 *              │ yes
 *              ▼
 *   module.enableCompileCache(folder) ──▶ modules load from cache ──▶ after /ready: flushCompileCache()
 *
 * Why: compiling the JavaScript of the ~250 dependency files Rota loads (Fastify, Ajv, undici, pino…)
 * was the largest item of start-up: wrapSafe, V8's compile of a CommonJS file, had 110-190 ms of the
 * CPU of a start to the first /ready (--cpu-prof of `node dist/main.js`, cache off). From the cache, V8 only
 * checks each file's hash and deserialises its code.
 *
 * Why a private folder and not Node's default (os.tmpdir()/node-compile-cache, shared by every user):
 * V8 trusts what it deserialises, so whoever can write the folder can run code in Rota. The default is
 * a folder of this user's own under the temp folder, made 0700; one that exists with other owners or
 * wider rights is not used. Entries are keyed by file path and checked against the file's content, so a
 * rebuilt dist/ never runs stale code; NODE_COMPILE_CACHE set by the operator wins (Node enables it
 * before any code runs) and NODE_DISABLE_COMPILE_CACHE=1 turns it off, as for any Node program.
 */
import { lstatSync, mkdirSync } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import module from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { switchWord } from '../lib/switch-words.ts';
import { tricksOff } from './tricks.ts';

export type CacheChoice =
  | { readonly kind: 'off' }
  | { readonly kind: 'dir'; readonly path: string; readonly explicit: boolean };

/** Where the cache goes: ROTA_COMPILE_CACHE (a folder, or off), else a per-user folder under tmp. */
export function chooseCacheDir(
  env: NodeJS.ProcessEnv,
  uid: number | undefined,
  tmp: string = tmpdir(),
): CacheChoice {
  const v = (env.ROTA_COMPILE_CACHE ?? '').trim();
  const word = switchWord(v);
  if (word === 'off' || tricksOff(env.ROTA_RUNTIME_OFF).has('compile-cache')) return { kind: 'off' };
  // An on word means the default folder: never a folder of that name in the working directory.
  if (word === null && v !== '') return { kind: 'dir', path: v, explicit: true };
  return { kind: 'dir', path: join(tmp, `rota-compile-cache-${uid ?? 'user'}`), explicit: false };
}

export type PrivateCheck = { readonly ok: true } | { readonly ok: false; readonly why: string };

/** Makes the folder (0700) if missing; then it must be a real folder of this user, writable by no other. */
export function ensurePrivateDir(path: string, uid: number | undefined): PrivateCheck {
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    const st = lstatSync(path);
    if (st.isSymbolicLink() || !st.isDirectory()) return { ok: false, why: 'not a folder' };
    if (uid !== undefined && st.uid !== uid) return { ok: false, why: `owned by uid ${st.uid}` };
    if ((st.mode & 0o022) !== 0) return { ok: false, why: 'writable by other users' };
    return { ok: true };
  } catch (e) {
    return { ok: false, why: (e as NodeJS.ErrnoException).code ?? String(e) };
  }
}

export type CacheState =
  | { readonly kind: 'enabled'; readonly dir: string; readonly own: boolean }
  | { readonly kind: 'off' }
  | { readonly kind: 'skipped'; readonly why: string };

/** What enableCompileCache did in this process, for compileCacheAfterReady. */
let thisProcess: CacheState = { kind: 'off' };

/** Turns the cache on for this process; never throws (a cache is an optimisation, not a dependency). */
export function enableCompileCache(
  env: NodeJS.ProcessEnv = process.env,
  warn: (line: string) => void = (l) => process.stderr.write(`${l}\n`),
): CacheState {
  thisProcess = decide(env, warn);
  return thisProcess;
}

function decide(env: NodeJS.ProcessEnv, warn: (line: string) => void): CacheState {
  if (typeof module.enableCompileCache !== 'function') return { kind: 'skipped', why: 'not supported' };
  const already = module.getCompileCacheDir?.();
  if (already !== undefined) return { kind: 'enabled', dir: already, own: false };
  const choice = chooseCacheDir(env, process.getuid?.());
  if (choice.kind === 'off') return choice;
  const check = ensurePrivateDir(choice.path, process.getuid?.());
  if (!check.ok) {
    warn(`COMPILE_CACHE_SKIPPED ${choice.path}: ${check.why}; modules compile from source`);
    return { kind: 'skipped', why: check.why };
  }
  const r = module.enableCompileCache(choice.path);
  const { ENABLED, ALREADY_ENABLED } = module.constants.compileCacheStatus;
  if (r.status === ENABLED || r.status === ALREADY_ENABLED)
    // getCompileCacheDir names the subfolder of this Node version and flag set; r.directory, its parent.
    return {
      kind: 'enabled',
      dir: module.getCompileCacheDir?.() ?? r.directory ?? '',
      own: !choice.explicit && r.status === ENABLED,
    };
  // DISABLED is NODE_DISABLE_COMPILE_CACHE=1: the operator's choice, said nothing about.
  if (r.status !== module.constants.compileCacheStatus.DISABLED && choice.explicit)
    warn(`COMPILE_CACHE_SKIPPED ${choice.path}: ${r.message ?? 'failed'}`);
  return { kind: 'skipped', why: r.message ?? 'disabled' };
}

/** Writes what this process compiled so far, so that the next start finds it even after a SIGKILL. */
export function flushCompileCache(): void {
  if (module.getCompileCacheDir?.() !== undefined) module.flushCompileCache?.();
}

/** Once the server is ready: the cache written, and stale caches of other versions pruned (in the background). */
export function compileCacheAfterReady(): void {
  flushCompileCache();
  void pruneStaleCaches(thisProcess);
}

/** A cache for another Node version or flag set that nothing has written to for this long goes. */
export const STALE_CACHE_MS = 30 * 24 * 3600 * 1000;

/**
 * Node keeps one subfolder per Node version and flag set (`v24.21.0-x64-<hash>-<uid>`) and never removes
 * one: after upgrades, dead caches of ~3 MB each would pile up. In Rota's own default folder only (never
 * in one the operator named), the other subfolders untouched for STALE_CACHE_MS are removed. Errors are
 * ignored: another process may be pruning too. Returns the names removed.
 */
export async function pruneStaleCaches(
  state: CacheState,
  now: number = Date.now(),
  maxAgeMs: number = STALE_CACHE_MS,
): Promise<string[]> {
  if (state.kind !== 'enabled' || !state.own) return [];
  const root = dirname(state.dir);
  const inUse = basename(state.dir);
  const removed: string[] = [];
  const entries = await readdir(root, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    if (!e.isDirectory() || e.name === inUse || !e.name.startsWith('v')) continue;
    const path = join(root, e.name);
    const st = await stat(path).catch(() => null);
    if (st === null || now - st.mtimeMs < maxAgeMs) continue;
    await rm(path, { recursive: true, force: true }).then(
      () => removed.push(e.name),
      () => {},
    );
  }
  return removed;
}
