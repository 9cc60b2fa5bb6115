import pino from 'pino';
import { loadConfig } from '../../src/config.ts';
import type { Work } from '../../src/outbound/work.ts';
import { createServices } from '../../src/services.ts';
import { median } from '../lib/measure.ts';
import { alone, type Ctx, type ScenarioResult } from '../lib/report.ts';

/**
 * The policy rule lookup in the call prelude (src/outbound/prelude.ts), in process: the same
 * `CallPrelude.prepare` every door calls, timed per call over 1,000 target hosts (names the SSRF allow
 * list exempts, so that no call waits for DNS), first with no rule, then with 200 rules of host patterns
 * (an exact name and a `*.` parent each; every tenth with path prefixes too), a fifth of the hosts
 * matching one. The difference is what the lookup adds to a call. A second figure: hosts never seen
 * before (each call a miss of the per-host cache, the index walked).
 */
const HOSTS = 1_000;
const CALLS = 200_000;
const ROUNDS = 7;

const rules = Array.from({ length: 200 }, (_, i) => ({
  name: `site-${i}`,
  match: {
    hosts: [`www.site${i}.bench.example`, `*.cdn${i}.bench.example`],
    ...(i % 10 === 0 ? { paths: ['/search', '/api/'] } : {}),
  },
  proxies: { tags_none: ['slow'] },
}));

const work: Work<null> = {
  method: 'GET',
  replay: 'by-method',
  run: () => Promise.resolve(null),
  answer: () => null,
  discard: () => {},
};

function targets(n: number, prefix: string): URL[] {
  // A fifth of the hosts fall under a rule's `*.cdn<i>` pattern; the rest match none.
  return Array.from(
    { length: n },
    (_, i) =>
      new URL(`http://${prefix}${i}.${i % 5 === 0 ? `cdn${i % 200}` : `other${i}`}.bench.example/p?q=1`),
  );
}

/** ns per prepare() over `urls`, the median of ROUNDS timed loops of CALLS calls. */
function timed(prepare: (u: URL) => unknown, urls: URL[]): number {
  const per: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) prepare(urls[i % urls.length] as URL);
    per.push(Number(process.hrtime.bigint() - t0) / CALLS);
  }
  return median(per);
}

export async function policies(ctx: Ctx): Promise<ScenarioResult> {
  ctx.log('  policies: prelude per call, no rule vs 200 rules, 1,000 hosts (in process)');
  const config = loadConfig({
    ROTA_SSRF_ALLOW: '*.bench.example',
    ROTA_LOG_LEVEL: 'silent',
    ROTA_PROXY_PORT: '0',
    ROTA_SOCKS_PORT: '0',
  });
  const s = await createServices(config, pino({ level: 'silent' }), { processMetrics: false });
  try {
    await s.pool.add({ url: 'http://127.0.0.1:9' });
    const prepare = (u: URL) => s.prelude.prepare({ target: u, work: () => work, path: u.pathname });
    const hosts = targets(HOSTS, 'h');
    timed(prepare, hosts); // warm-up: JIT, the SSRF verdicts
    const none = timed(prepare, hosts);
    await s.policies.replace({ rules });
    timed(prepare, hosts);
    const withRules = timed(prepare, hosts);
    // Ever new hosts: each call misses the per-host cache (the rule book's index is walked).
    const fresh = targets(CALLS, 'n');
    const missNs = timed(prepare, fresh) - none;
    const addedUs = (withRules - none) / 1000;
    const S = 'Policies';
    return {
      rows: [
        alone(S, 'prelude µs per call, no rule', none / 1000),
        alone(S, 'prelude µs per call, 200 rules', withRules / 1000),
        alone(S, 'rule lookup added µs per call (200 rules)', addedUs, { max: 5 }),
        alone(S, 'rule lookup added µs per call, new host each call', missNs / 1000, { max: 5 }),
      ],
      raw: { noRuleNs: none, withRulesNs: withRules, newHostAddedNs: missNs, calls: CALLS, rounds: ROUNDS },
    };
  } finally {
    await s.close();
  }
}
