/**
 * Keeps one of process.nextTick's queue entries alive for the life of the process, so that the shape
 * V8 gave those entries is never collected.
 *
 *   main.ts ──▶ keepTickShape() ──▶ an async hook enabled for one nextTick(noop) ──▶ its TickObject kept
 *                                                                                    (one small object)
 *   nextTick's literal `{ [async_id_symbol]: …, [trigger_async_id_symbol]: …, [kAsyncContextFrame]: …,
 *   callback, args }` ──▶ its maps stay reachable (the kept object's map, and its parents through the
 *   back pointers) ──▶ the function's feedback never points at a cleared map
 *
 * Why: every stream write, read and close in Node goes through process.nextTick (~10 per proxied GET).
 * Its feedback holds the maps of that literal's computed-key stores weakly. A full GC at a moment when
 * no entry is queued (start-up; any quiet second) collects those maps, and the slots stay MONOMORPHIC
 * on `[cleared]` (`%DebugPrint(process.nextTick)`; tick-shape.test.ts shows it in an empty Node after
 * two full GCs): the interpreter defines such properties through a runtime call that does not relearn
 * a monomorphic slot, so when load then made nextTick hot, V8 compiled each store as a generic runtime
 * call (perf: Runtime_DefineKeyedOwnPropertyInLiteral, MigrateToMap). Measured in Rota's process:
 * 400-650 ns per nextTick against 80-180 ns in an empty Node, and ~5-6 µs of CPU per absolute-URI GET
 * (--cpu-prof: nextTick's self time 6.0-6.6 µs per GET, 1.0-1.4 µs once fixed).
 */
import { createHook } from 'node:async_hooks';

let kept: object | null = null;

/** True once an entry is kept (a Node whose queue entries are not TickObjects keeps nothing: false). */
export function keepTickShape(): boolean {
  if (kept !== null) return true;
  let found: object | null = null;
  const hook = createHook({
    init(_id, type, _trigger, resource) {
      if (type === 'TickObject' && found === null) found = resource as object;
    },
  });
  hook.enable();
  try {
    process.nextTick(() => {});
  } finally {
    hook.disable();
  }
  kept = found;
  return kept !== null;
}
