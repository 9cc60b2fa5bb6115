/**
 * Runs `process.nextTick` a few thousand times as the process starts, before the server's modules load.
 *
 *   main.ts ──▶ primeNextTick() ──▶ 5 rounds of 1,000 nextTick(noop), one round per event-loop turn
 *                    │                 (about 1 ms of CPU in all; the server loads meanwhile)
 *                    ▼
 *   nextTick's object literal `{ [async_id_symbol]: …, …, callback, args }` learns its maps while they
 *   are alive, and the function is compiled (Maglev) from that feedback
 *
 * Why: every stream write, read and close in Node goes through process.nextTick, ~10 per proxied GET.
 * In Rota's process (not in an empty one) the feedback of that literal's computed-key stores ended up,
 * after start-up, MONOMORPHIC on maps the GC had since cleared (`%DebugPrint(process.nextTick)` showed
 * `[cleared]` in four of its five DefineKeyedOwnPropertyInLiteral slots). Those stores go through a
 * runtime call in the interpreter that does not relearn such a slot, so when the load later made
 * nextTick hot, TurboFan compiled each store as a generic runtime call (perf: Runtime_
 * DefineKeyedOwnPropertyInLiteral, MigrateToMap): 400-650 ns per nextTick against 80-180 ns in an empty
 * process, ~5-6 µs of CPU per absolute-URI GET (--cpu-prof, nextTick's self time 6.3 vs 1.0 µs with
 * this primer). Primed while the maps are fresh, the function is compiled with stores it can inline.
 * BENCHMARKS.md (fourteenth session) has the measurements.
 */
export function primeNextTick(
  rounds = 5,
  perRound = 1_000,
  tick: (fn: () => void) => void = process.nextTick,
): void {
  let left = rounds;
  const noop = (): void => {};
  const round = (): void => {
    for (let i = 0; i < perRound; i++) tick(noop);
    if (--left > 0) setImmediate(round);
  };
  round();
}
