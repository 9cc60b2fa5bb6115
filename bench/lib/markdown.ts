import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { SMALL_BYTES } from './fixtures.ts';
import type { Machine } from './machine.ts';
import { fmt, isNum, type Row, resultsTable, type TargetCheck, targetsTable } from './report.ts';

export const NOTES_MARKER =
  '<!-- Hand-written notes below this line are kept when npm run bench rewrites this file. -->';

export interface RunReport {
  readonly machine: Machine;
  readonly command: string;
  readonly quick: boolean;
  readonly squidVersion: string;
  readonly proxywhirl: string;
  readonly rows: readonly Row[];
  readonly targets: readonly TargetCheck[];
  readonly notes: readonly string[];
  /** Whole sections written by workloads with their own tables (workload 8). */
  readonly sections: readonly string[];
  readonly loadAfter: string;
  readonly elapsedS: number;
}

/** What the direct path says about squid as the upstream, in the run's own figures. */
function upstreamHeadroom(rows: readonly Row[]): string {
  const t = rows.find((r) => r.workload.startsWith('1.') && r.metric === 'successful req/s');
  if (!t || !isNum(t.direct)) return 'The direct path could not be measured in this run.';
  const best = Math.max(isNum(t.rota) ? t.rota : 0, isNum(t.proxywhirl) ? t.proxywhirl : 0);
  const headroom = best > 0 ? `, ${fmt(t.direct / best, 1)}× what the faster gateway reached` : '';
  return `In this run wrk straight through squid reached ${fmt(t.direct, 0)} req/s${headroom}.`;
}

export function renderSummary(r: RunReport): string {
  return [
    '## Results',
    '',
    resultsTable(r.rows),
    '',
    '## Targets',
    '',
    targetsTable(r.targets),
    '',
    ...r.sections.flatMap((s) => [s, '']),
    ...(r.notes.length > 0 ? ['## Run notes', '', ...r.notes.map((n) => `- ${n}`), ''] : []),
  ].join('\n');
}

function setUp(r: RunReport): string[] {
  return [
    '## Set-up',
    '',
    'Everything runs on loopback and is started and stopped by the harness (bench/run.ts), one workload at',
    `a time. **wrk and the servers share the machine's ${r.machine.nproc} cores**: the load generator (one`,
    'wrk thread), the upstream proxy, the target and the gateway all compete for them, so every figure here',
    'is lower than it would be with the load generator on another machine, and the direct path is the limit',
    'of this machine, not of squid. Every subject gets the same unmeasured warm-up run before it is',
    'measured (then the harness waits until the gateway process is idle again). Figures vary from run to',
    'run on this VM, so in workloads 1-3 the direct path is run just before and just after Rota and the',
    'two runs are pooled (the run notes give both). Before each workload the harness waits (up to 10 min)',
    'until other programs use under 15% of the CPU, notes what it saw, and notes any measured run during',
    'which they took more than 5%.',
    '',
    `- **Target**: a Node \`http\` server in the harness process (keep-alive): \`/json\` (${SMALL_BYTES}-byte JSON body) and`,
    '  `/big` (1 MiB of ASCII text).',
    `- **Upstream forward proxy**: Debian's squid ${r.squidVersion}, one process listening on 10 loopback ports`,
    '  (10 distinct proxies for the gateways), no cache, no access log, persistent connections to both sides.',
    '  Chosen because it keeps connections alive towards the client and the target, so it is not the',
    "  bottleneck; Debian's tinyproxy closes every client connection (~12k req/s) and would have been.",
    `  ${upstreamHeadroom(r.rows)}`,
    '- **Rota**: started as `npm start` does (`bash scripts/with-node.sh node <its heap flags> dist/main.js`, the production',
    '  build, made once before the workloads; the flags of src/lib/node-flags.ts; NODE_ENV=production),',
    '  memory store (workload 5: SQLite), default log level, auth off, `ROTA_SSRF_ALLOW=127.0.0.0/8` (loopback',
    '  target and proxies), and generous rate limits: `ROTA_RATE_LIMIT`, `ROTA_RATE_LIMIT_REQUEST`,',
    '  `ROTA_RATE_LIMIT_ADD_PROXY`, `ROTA_RATE_LIMIT_HEALTH_CHECK` = `1000000/second`. Everything else default',
    '  (ROTA_TIMEOUT=30, ROTA_MAX_RETRIES=3, breaker threshold 5 in 60 s, round-robin).',
    `- **proxywhirl ${r.proxywhirl}** from PyPI in bench/.venv (git-ignored), its FastAPI app under uvicorn`,
    '  (one worker, access log off like Rota), with its API key set (`PROXYWHIRL_REQUIRE_AUTH=true`),',
    '  the same 10 squid proxies and the same target. It refuses loopback targets and proxies, so',
    '  bench/proxywhirl_launcher.py lifts exactly those checks: `validate_target_url_safe` is called with',
    '  `allow_private=True`, and `Proxy.allow_local` defaults to true. It also disables the slowapi limiter,',
    '  because `POST /api/v1/request` carries a hard-coded 50/minute limit that no setting changes (Rota runs',
    '  with generous limits too). Nothing else is changed.',
    '- **Load generator**: wrk (Debian) with bench/wrk/bench.lua for the JSON POST bodies; latency figures are',
    "  wrk's (from the client, so they include wrk's own scheduling on the shared cores).",
    '- **Workloads**: 1. `POST /api/v1/request` (a GET of `/json` through the pool) at 50 connections; 2. the',
    '  same at 1 connection; 3. the same for `/big` at 10 connections; each for 20 s per subject. 4. Rota with',
    '  5 squid proxies and 5 that accept and never answer, interleaved, 50 connections, 20 s. 5. Rota on',
    '  SQLite with 100,000 proxies written by its own store module (each with username and password);',
    '  start-up is timed from spawn to the first 200 of `/api/v1/ready`, three times (median and slowest),',
    '  and includes scripts/with-node.sh (about 0.2 s: it checks the Node version and install stamp).',
    '  6. 1,000 proxies (squid ports × 100 usernames), `ROTA_HEALTH_CHECK_CONCURRENCY` 50 and 200.',
    '  7. The stack floor: bench/reference/relay.ts, a minimal Node relay on the same stack (node:http, one',
    '  undici Pool per squid port, JSON answer; no validation, logs, metrics or anything else), then a fresh',
    '  Rota, same load as workload 1, between two direct runs; its figures are in the run notes, with the',
    '  CPU each process used per call (gateway, squid, and the target, which is the harness process; wrk',
    '  and the kernel are the rest) and the share of the machine left idle during each measured run.',
    "  8. Rota's forward-proxy listener (`ROTA_PROXY_PORT`) next to squid, proxy-chain and a minimal",
    '  forward relay: absolute-URI GETs, CONNECT tunnels, bulk through one tunnel, 5,000 idle tunnels; its',
    '  set-up and tables are in its own section below the targets.',
    '- Peak RSS is the kernel high-water mark (VmHWM, reset before each measured run) of the gateway process;',
    '  each of workloads 1-3 starts both gateways afresh, so no figure carries what an earlier one left.',
    '',
  ];
}

export function renderMarkdown(r: RunReport, keptNotes: string): string {
  const m = r.machine;
  return [
    '# Benchmarks',
    '',
    'Written by `npm run bench` (bench/run.ts). The tables are the harness output of the run below, unedited;',
    'run it again to refresh them. It is a benchmark, not a test: `npm test` does not run it.',
    '',
    `- Date: ${m.date}`,
    `- Command: \`${r.command}\` (${(r.elapsedS / 60).toFixed(1)} min)`,
    `- Machine: ${m.nproc} cores (nproc), ${m.cpu}, ${m.memoryGiB.toFixed(1)} GiB memory, ${m.kernel}`,
    `- Software: Node ${m.node}, ${m.wrk}, squid ${r.squidVersion}, ${m.python}, proxywhirl ${r.proxywhirl}`,
    `- Load average (1/5/15 min) before: ${m.loadBefore}; after: ${r.loadAfter}`,
    '',
    ...setUp(r),
    renderSummary(r),
    NOTES_MARKER,
    keptNotes,
  ].join('\n');
}

/** Rewrites BENCHMARKS.md, keeping whatever was written by hand below the notes marker. */
export function writeBenchmarks(path: string, r: RunReport): void {
  let kept = '\n';
  if (existsSync(path)) {
    const old = readFileSync(path, 'utf8');
    const i = old.indexOf(NOTES_MARKER);
    if (i !== -1) kept = old.slice(i + NOTES_MARKER.length);
  }
  writeFileSync(path, renderMarkdown(r, kept.endsWith('\n') ? kept : `${kept}\n`));
}
