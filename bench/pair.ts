/**
 * `npm run bench:pair`: two Rota builds (or one build with two settings) measured against each other
 * through the HTTP listener, both under the same load at the same time, so that whatever the machine
 * does meanwhile happens to both.
 *
 *   wrk (or tunnel loops) ──▶ Rota A ──┐
 *                                      ├──▶ squid (10 ports) ──▶ target
 *   wrk (or tunnel loops) ──▶ Rota B ──┘
 *
 * Why, and how it is read: BENCHMARKS.md, "Paired runs". Each round gives both processes' CPU per call
 * (user + system from /proc over the round, divided by the calls) and the ratio B/A. Which load starts
 * first moves the ratio by a few percent (seen with the same build on both sides): rounds alternate it
 * (the `first` column).
 *
 *   node bench/pair.ts --b-script bench/.work/old/main.js                      # dist/ (A) against an old build
 *   node bench/pair.ts --b-flags=--max-semi-space-size=0 --mode tunnel         # one flag, CONNECT tunnels
 *   node bench/pair.ts --b-env ROTA_HEDGE_DELAY_S=0 --rounds 8
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startTarget } from './lib/fixtures.ts';
import { cpuTicks, median } from './lib/measure.ts';
import { installCleanup, stopAll } from './lib/proc.ts';
import { ROOT, startRotaForward } from './lib/rota.ts';
import { startSquid } from './lib/squid.ts';
import { runTunnelLoad } from './lib/tunnels.ts';
import { wrk } from './lib/wrk.ts';

const { values: o } = parseArgs({
  options: {
    'a-script': { type: 'string', default: 'dist/main.js' },
    'b-script': { type: 'string', default: 'dist/main.js' },
    'a-flags': { type: 'string', default: '' },
    'b-flags': { type: 'string', default: '' },
    'a-env': { type: 'string', default: '' },
    'b-env': { type: 'string', default: '' },
    mode: { type: 'string', default: 'get' },
    rounds: { type: 'string', default: '6' },
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '25' },
  },
});
if (o.mode !== 'get' && o.mode !== 'tunnel') throw new Error('--mode is get or tunnel');
const rounds = Number(o.rounds);
const seconds = Number(o.seconds);
const connections = Number(o.connections);

type Side = Awaited<ReturnType<typeof startSide>>;

/** User + system CPU of a process so far, ms (clock ticks of 10 ms). */
const cpuMs = (pid: number) => (cpuTicks(pid) ?? Number.NaN) * 10;

/** `K=V,K2=V2` as an environment. */
function envOf(list: string): Record<string, string> {
  const pair = (kv: string) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as const;
  return Object.fromEntries(list.split(',').filter(Boolean).map(pair));
}

/** One load of `s` for `durationS`: the calls it completed. */
async function load(s: Side, authority: string, durationS: number): Promise<number> {
  if (o.mode === 'tunnel') {
    const job = { mode: 'rate', proxyPort: s.port, authority, path: '/json', loops: connections } as const;
    return (await runTunnelLoad({ ...job, durationS })).done;
  }
  const url = `http://127.0.0.1:${s.port}/`;
  const headers = { host: authority };
  const r = await wrk({ url, path: `http://${authority}/json`, headers, connections, durationS });
  return r.requests;
}

async function startSide(name: 'A' | 'B', ports: readonly number[], workDir: string) {
  const lower = name === 'A' ? 'a' : 'b';
  const nodeFlags = (o[`${lower}-flags`] ?? '').split(' ').filter(Boolean);
  const side = { name: `pair-${lower}`, workDir, script: o[`${lower}-script`], nodeFlags };
  const rota = await startRotaForward({ ...side, env: envOf(o[`${lower}-env`] ?? '') }, ports);
  return { name, port: rota.proxyPort, pid: rota.proc.pid };
}

async function main(): Promise<void> {
  installCleanup((m) => process.stderr.write(`${m}\n`));
  const workDir = join(ROOT, 'bench', '.work', 'pair');
  const target = await startTarget();
  const squid = await startSquid(workDir, 10);
  const authority = `127.0.0.1:${target.port}`;
  const sides = [await startSide('A', squid.ports, workDir), await startSide('B', squid.ports, workDir)];
  await Promise.all(sides.map((s) => load(s, authority, 3)));
  console.log(`mode ${o.mode}, ${connections} connections each, ${rounds} rounds of ${seconds} s`);
  console.log('round\tA µs/call\tB µs/call\tB/A\tfirst');
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? sides : [...sides].reverse();
    const before = sides.map((s) => cpuMs(s.pid));
    const started = new Map(order.map((s) => [s.name, load(s, authority, seconds)]));
    const calls = await Promise.all(sides.map((s) => started.get(s.name)!));
    const us = sides.map((s, i) => ((cpuMs(s.pid) - before[i]!) * 1000) / Math.max(1, calls[i]!));
    ratios.push(us[1]! / us[0]!);
    const cells = [r + 1, us[0]!.toFixed(1), us[1]!.toFixed(1), ratios.at(-1)!.toFixed(3), order[0]!.name];
    console.log(cells.join('\t'));
  }
  console.log(`median B/A ${median(ratios).toFixed(3)} (below 1: B uses less CPU per call)`);
  await target.close();
}

main()
  .catch((e: unknown) => {
    process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
    process.exitCode = 1;
  })
  .finally(() => void stopAll());
