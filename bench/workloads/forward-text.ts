import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Ctx } from '../lib/context.ts';
import { FORWARD_NAMES, type ForwardName, logErrors, type Subjects } from '../lib/forward-gateways.ts';
import { fmt } from '../lib/report.ts';
import { ROOT } from '../lib/rota.ts';
import { failuresText } from '../lib/tunnels.ts';
import type { ForwardResults, Outcome } from './forward-report.ts';

function packageVersion(name: string): string {
  try {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? 'unknown';
  } catch {
    return 'not installed';
  }
}

export const PROXY_CHAIN_VERSION = packageVersion('proxy-chain');

export const TITLES: Record<ForwardName, string> = {
  direct: 'direct (squid)',
  rota: 'Rota',
  proxyChain: 'proxy-chain',
  relay: 'reference relay',
};

/** The set-up of workload 8, at the top of its section. */
export function forwardIntro(ctx: Ctx): string[] {
  const bulkS = ctx.quick ? 2 : 10;
  const holdS = ctx.quick ? 2 : 5;
  return [
    "Four HTTP forward proxies, each ending at the same squid (workload 1's, 10 loopback ports), each",
    'measured alone with the same load and the same unmeasured warm-up first: **direct** is squid itself;',
    '**Rota** is `npm start` with `ROTA_PROXY_PORT` and `ROTA_SOCKS_PORT` on free ports, the 10 squid ports',
    "as its pool and the set-up of workloads 1-7 (round-robin); **proxy-chain** is Apify's npm package",
    `(${PROXY_CHAIN_VERSION}, bench/reference/proxy-chain.ts), whose \`prepareRequestFunction\` hands out`,
    'the next squid port for every request and every CONNECT (round-robin over the same 10 ports as Rota;',
    "everything else its defaults, i.e. Node's keep-alive global agent towards squid); the **reference",
    "relay** is bench/reference/forward-relay.ts, the least a forward proxy on Rota's stack can do",
    '(node:http; one undici Pool per squid port for absolute-URI requests, answers written with',
    '`Pool.stream`; a raw socket and a CONNECT to squid for tunnels; round-robin). Every proxy runs in a',
    "process of its own, its open-file limit raised to 65,536 where the machine's hard limit allows (the",
    "run notes give each one's). This machine is shared: before each phase the harness waits (up to 5 min)",
    'for other programs to use under 15% of the CPU, and a measured run during which they took 10% or more',
    'is measured again once the machine is quiet, at most twice (never in 8.5, whose second batch of',
    'tunnels would reuse the memory of the first); the run notes say which runs, and how busy it was.',
    '',
    `- 8.1 and 8.4: wrk, 1 thread, 50 and 1 connections, ${ctx.loadS} s each after a ${ctx.warmS} s warm-up,`,
    '  connected to the proxy and sending `GET http://127.0.0.1:<target>/json HTTP/1.1` with the target',
    '  as Host (bench/wrk/bench.lua); keep-alive. The direct path runs before and after the three gateways',
    "  and the two runs are pooled. CPU per call is each process's user + system time over the measured",
    '  run divided by the calls (the proxy; squid; the target, which is the harness process; the direct',
    "  column's CPU figures are from its first run); wrk and the kernel are the rest.",
    `- 8.2: bench/lib/tunnel-load.ts in a process of its own, 50 concurrent loops for ${ctx.loadS} s, each`,
    '  opening a TCP connection to the proxy, `CONNECT 127.0.0.1:<target>`, reading the 200, sending one',
    '  `GET /json` through the tunnel, reading the answer and closing; a tunnel counts once its answer is',
    '  in.',
    `- 8.3: one tunnel, \`GET /stream?bytes=67108864\` (64 MiB streamed by the target) again and again`,
    `  for ${bulkS} s after one unmeasured download; the direct path before and after the gateways, pooled.`,
    `- 8.5: fresh proxies; 5,000 tunnels opened (100 CONNECTs in flight at a time) and held idle for`,
    `  ${holdS} s, then one GET through each, then all closed. RSS is the proxy's VmRSS just before and 1 s`,
    '  after the last tunnel opened; descriptors are /proc/<pid>/fd, watched for up to 15 s after closing.',
  ];
}

function proxyNotes(all: readonly Subjects[]): string[] {
  const notes: string[] = [];
  const seen = new Set<string>();
  for (const [i, subjects] of all.entries()) {
    const phase = i === 0 ? 'load phases' : 'idle-tunnel phase';
    for (const name of FORWARD_NAMES) {
      const s = subjects.get(name);
      if (s === undefined) continue;
      if (s instanceof Error) {
        notes.push(`8. ${TITLES[name]} (${phase}) could not be started: ${s.message}`);
        continue;
      }
      for (const why of new Set([s.getError, s.connectError])) {
        if (why !== null) notes.push(`8. ${TITLES[name]} (${phase}) probe: ${why}.`);
      }
      if (s.socksError !== undefined && s.getError === null) {
        const what = s.socksError ?? 'a CONNECT to the target and a GET through it answered 200';
        notes.push(`8. Rota's SOCKS5 listener (${phase}, a smoke test, not measured): ${what}.`);
      }
      if (s.logPath === null || seen.has(s.logPath)) continue;
      seen.add(s.logPath);
      const errors = logErrors(s.logPath);
      if (errors.count > 0)
        notes.push(
          `8. ${TITLES[name]} (${phase}) logged ${errors.count} error line(s); the first: ${errors.first}`,
        );
    }
  }
  const limits = [...(all[0]?.values() ?? [])]
    .filter((s) => !(s instanceof Error) && s.nofile !== null)
    .map((s) => (s instanceof Error ? '' : `${TITLES[s.name]} ${fmt(s.nofile ?? 0, 0)}`));
  if (limits.length > 0) notes.push(`8. Open-file limits (soft): ${limits.join(', ')}.`);
  return notes;
}

function failureNotes<T>(
  label: string,
  m: ReadonlyMap<ForwardName, Outcome<T>>,
  f: (v: T) => string,
): string[] {
  const parts: string[] = [];
  for (const [name, o] of m) {
    const text = o.ok ? f(o.value) : 'none';
    if (text !== 'none') parts.push(`${TITLES[name]}: ${text}`);
  }
  return parts.length > 0 ? [`${label}, failures by kind: ${parts.join('; ')}.`] : [];
}

/** What the tables cannot say: probes that failed, errors the proxies logged, failures by kind, limits. */
export function forwardNotes(r: ForwardResults): string[] {
  const wrkErrors = (e: {
    connect: number;
    read: number;
    write: number;
    status: number;
    timeout: number;
  }) => {
    const parts = Object.entries(e)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${n} ${k}`);
    return parts.length > 0 ? parts.join(', ') : 'none';
  };
  return [
    ...proxyNotes(r.subjects),
    ...failureNotes('8.1 GET at 50 connections (wrk)', r.get50, (v) => wrkErrors(v.wrk.errors)),
    ...failureNotes('8.4 GET at 1 connection (wrk)', r.get1, (v) => wrkErrors(v.wrk.errors)),
    ...failureNotes('8.2 CONNECT tunnels', r.rate, (v) => failuresText(v.rate.failed)),
    ...failureNotes('8.3 bulk download', r.bulk, (v) => failuresText(v.failed)),
    ...failureNotes('8.5 idle tunnels', r.idle, (v) => failuresText(v.failed)),
  ];
}
