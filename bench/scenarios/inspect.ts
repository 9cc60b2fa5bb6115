import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import { join } from 'node:path';
import { serve, startTarget } from '../lib/fixtures.ts';
import { forwardOptions, type Measured, measureTunnels, measureWrk, subjectCpu } from '../lib/measure.ts';
import { canConnect, freePort, must, run, startProcess, waitUntil } from '../lib/proc.ts';
import { pipInstall } from '../lib/refs.ts';
import { alone, type Ctx, type Row, type ScenarioResult, versus } from '../lib/report.ts';
import { ROOT, startRotaForward } from '../lib/rota.ts';
import { startSquid } from '../lib/squid.ts';
import type { TunnelResult } from '../lib/tunnels.ts';
import { goodput, type WrkResult } from '../lib/wrk.ts';

/**
 * HTTPS inspection through Rota's HTTP listener (ROTA_INSPECT_HOSTS) against mitmproxy (mitmdump in
 * upstream mode, PyPI, bench/.venv/mitmproxy) and squid's own ssl_bump (Debian's squid-openssl, unpacked
 * into bench/.work), each chained to the same squid, to one HTTPS target in this process (on ::, with a
 * self-signed certificate for localhost and the 1,000 hosts 127.1.x.y, trusted by Rota through
 * NODE_EXTRA_CA_CERTS); the load client (bench/lib/tunnels.ts) trusts only the inspector's CA:
 *
 *   tunnels.ts ─CONNECT, TLS, GETs─▶ Rota | mitmdump | squid ssl_bump ─CONNECT─▶ squid ─TLS─▶ HTTPS target
 *   wrk ─absolute-URI GET─▶ Rota ──▶ squid ──▶ HTTP target        (the plain GET, for the CPU ratio)
 */
const MITMPROXY_VERSION = '11.0.2';
const MITM = join(ROOT, 'bench', '.venv', 'mitmproxy');
const HOSTS = Array.from({ length: 1000 }, (_, i) => `127.1.${1 + Math.floor(i / 250)}.${1 + (i % 250)}`);
/** Fewer leaves than hosts kept (mitmproxy keeps 100 too): each of the 1,000 hosts' connections makes one. */
const LEAVES_KEPT = '100';
const BUMP_CACHE = 'generate-host-certificates=on dynamic_cert_mem_cache_size=16MB';

/** mitmproxy from PyPI into a venv of its own (its pins differ from proxywhirl's). */
async function ensureMitmproxy(log: (m: string) => void): Promise<string> {
  const bin = join(MITM, 'bin', 'mitmdump');
  const has = async () =>
    existsSync(bin) && (await run(bin, ['--version'])).stdout.includes(MITMPROXY_VERSION);
  await pipInstall(MITM, [`mitmproxy==${MITMPROXY_VERSION}`], has, log);
  return bin;
}

/** Debian's squid-openssl unpacked (not installed: it conflicts with the squid every scenario uses). */
async function ensureSquidOpenssl(dir: string): Promise<string> {
  const bin = join(dir, 'usr', 'sbin', 'squid');
  if (existsSync(bin)) return bin;
  mkdirSync(dir, { recursive: true });
  const get = () => run('apt-get', ['download', 'squid-openssl'], { cwd: dir, timeoutMs: 300_000 });
  if ((await get()).code !== 0) await run('apt-get', ['update', '-qq'], { timeoutMs: 300_000 });
  if ((await get()).code !== 0) throw new Error('apt-get download squid-openssl failed');
  const deb = (await must('bash', ['-c', 'ls squid-openssl_*.deb'], { cwd: dir })).trim();
  await must('dpkg', ['-x', join(dir, deb), dir]);
  return bin;
}

/** The target's certificate (its own CA, EC P-256) and the CA squid bumps with (RSA, for its certgen). */
async function certificates(dir: string) {
  const [key, cert, bumpKey, bumpCert] = ['t.key', 't.pem', 'bump.key', 'bump.pem'].map((n) => join(dir, n));
  const sans = ['DNS:localhost', 'IP:127.0.0.1', ...HOSTS.map((h) => `IP:${h}`)].join(',');
  const x509 =
    'req -x509 -nodes -days 2 -addext basicConstraints=critical,CA:TRUE -subj /CN=rota-bench'.split(' ');
  const ec = '-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -addext'.split(' ');
  await must('openssl', [...x509, ...ec, `subjectAltName=${sans}`, '-keyout', key!, '-out', cert!]);
  await must('openssl', [...x509, '-newkey', 'rsa:2048', '-keyout', bumpKey!, '-out', bumpCert!]);
  return { key: key!, cert: cert!, bumpKey: bumpKey!, bumpCert: bumpCert! };
}
type Certs = Awaited<ReturnType<typeof certificates>>;

interface Inspector {
  readonly name: string;
  readonly port: number;
  readonly pid: number;
  /** The CA the load client trusts (PEM). */
  readonly ca: string;
  stop(): Promise<void>;
}

async function rota(ctx: Ctx, c: Certs, hosts: string, more: Record<string, string> = {}) {
  const allow = { ROTA_SSRF_ALLOW: '127.0.0.0/8,localhost', NODE_EXTRA_CA_CERTS: c.cert };
  const env = { ...allow, ROTA_INSPECT_HOSTS: hosts, ...more };
  const o = { name: 'inspect', workDir: ctx.workDir, nofile: 65_536, nodeFlags: ctx.rotaFlags, env };
  const r = await startRotaForward(o, ctx.squid.ports);
  const ca = await (await fetch(`${r.base}/api/v1/inspection/ca.pem`)).text();
  return { name: 'Rota', port: r.proxyPort, pid: r.proc.pid, ca, stop: r.stop };
}

/** mitmdump at its cheapest: upstream connected on the first request, no sniffing of its certificate. */
async function mitmproxy(ctx: Ctx, c: Certs, bin: string): Promise<Inspector> {
  const [port, confdir] = [await freePort(), join(ctx.workDir, 'mitmproxy')];
  rmSync(confdir, { recursive: true, force: true });
  const sets = [`confdir=${confdir}`, `ssl_verify_upstream_trusted_ca=${c.cert}`, 'connection_strategy=lazy'];
  const args = `-q --mode upstream:http://127.0.0.1:${ctx.squid.ports[0]} --listen-host 127.0.0.1`.split(' ');
  args.push('--listen-port', String(port), ...[...sets, 'upstream_cert=false'].flatMap((o) => ['--set', o]));
  const proc = startProcess('mitmproxy', bin, args, { logPath: join(ctx.workDir, 'logs', 'mitmproxy.log') });
  await waitUntil(proc, 'mitmdump', () => canConnect(port), 60_000, 50);
  const ca = readFileSync(join(confdir, 'mitmproxy-ca-cert.pem'), 'utf8');
  return { name: 'mitmproxy', port, pid: proc.pid, ca, stop: () => proc.stop() };
}

/** squid-openssl bumping every CONNECT at once (client-first), sending what it bumped to squid (peer). */
async function squidBump(ctx: Ctx, c: Certs): Promise<Inspector> {
  const bin = await ensureSquidOpenssl(join(ctx.workDir, 'squid-openssl'));
  const certgen = join(ctx.workDir, 'squid-openssl', 'usr', 'lib', 'squid', 'security_file_certgen');
  const lines = (dir: string, ports: readonly number[]) => [
    `http_port 127.0.0.1:${ports[0]} ssl-bump tls-cert=${c.bumpCert} tls-key=${c.bumpKey} ${BUMP_CACHE}`,
    `sslcrtd_program ${certgen} -s ${join(dir, 'ssl_db')} -M 16MB`,
    'sslcrtd_children 4 startup=1 idle=1',
    'ssl_bump bump all',
    `tls_outgoing_options cafile=${c.cert}`,
    'never_direct allow all',
    `cache_peer 127.0.0.1 parent ${ctx.squid.ports[0]} 0 no-query no-digest default`,
  ];
  const init = async (dir: string) => {
    await must(certgen, ['-c', '-s', join(dir, 'ssl_db'), '-M', '16MB']);
    if (process.getuid?.() === 0) await must('chown', ['-R', 'proxy:proxy', dir, c.bumpKey]);
  };
  const s = await startSquid(ctx.workDir, 1, { name: 'squid-bump', bin, lines, init });
  const ca = readFileSync(c.bumpCert, 'utf8');
  return { name: 'squid ssl_bump', port: s.ports[0]!, pid: s.proc.pid, ca, stop: () => s.proc.stop() };
}

type M = Measured<TunnelResult>;
type ByName = Record<string, M>;
type Load = 'keep' | 'one' | 'many' | 'plain';
interface Runs extends Readonly<Record<'keep' | 'one' | 'many', ByName>> {
  plain?: Measured<WrkResult>;
  readonly errors: Record<string, string>;
}

export async function inspect(ctx: Ctx): Promise<ScenarioResult> {
  const dir = join(ctx.workDir, 'inspect');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const certs = await certificates(dir);
  const tlsFiles = { key: readFileSync(certs.key), cert: readFileSync(certs.cert) };
  const target = await startTarget(https.createServer(tlsFiles, serve), '::');
  const r: Runs = { keep: {}, one: {}, many: {}, errors: {} };
  /** Starts one inspector, runs `loads` in this order, stops it; a failure is kept. */
  const each = async (name: string, start: () => Promise<Inspector>, loads: Load[]) => {
    ctx.log(`  ${name}`);
    let i: Inspector | undefined;
    try {
      i = await start();
      const [tls, authority] = [{ ca: i.ca }, `localhost:${target.port}`];
      const keep = { mode: 'keep', proxyPort: i.port, authority, path: '/json', loops: 50, tls } as const;
      const one = { ...keep, mode: 'rate' } as const;
      const jobs = { keep, one, many: { ...one, tls: { ...tls, hosts: HOSTS } } };
      const plain = { ...forwardOptions(i.port, ctx.target.jsonUrl), connections: 50 };
      for (const l of loads) {
        if (l === 'plain') r.plain = await measureWrk(ctx, plain, i.pid);
        else r[l][name] = await measureTunnels(ctx, jobs[l], i.pid);
      }
    } catch (e) {
      r.errors[name] = (e as Error).message;
      ctx.log(`  ${name} failed: ${r.errors[name]}`);
    } finally {
      await i?.stop();
    }
  };
  try {
    await each('Rota', () => rota(ctx, certs, 'localhost'), ['keep', 'one', 'plain']);
    await each(
      'Rota',
      () =>
        rota(ctx, certs, '*', {
          ROTA_INSPECT_CACHE: LEAVES_KEPT,
          ROTA_INSPECT_NEW_HOSTS_PER_MINUTE: '1000000',
        }),
      ['many'],
    );
    const mitm = async () => mitmproxy(ctx, certs, await ensureMitmproxy(ctx.log));
    await each('mitmproxy', mitm, ['keep', 'one', 'many']);
    await each('squid ssl_bump', () => squidBump(ctx, certs), ['keep', 'one']);
  } finally {
    await target.close();
  }
  return { raw: r, rows: rows(r) };
}

function rows({ keep, one, many, plain }: Runs): Row[] {
  const S = 'HTTPS inspection';
  /** Rota's figure against each other inspector measured (mitmproxy's with `min`), or alone. */
  const vs = (metric: string, by: ByName, f: (x: M) => number | null, min?: number) => {
    const [refs, rota] = [Object.keys(by).filter((n) => n !== 'Rota'), by.Rota ? f(by.Rota) : null];
    if (refs.length === 0) return [alone(S, metric, rota)];
    const bound = (n: string) => (n === 'mitmproxy' && min ? { min } : undefined);
    return refs.map((n) => versus(S, metric, rota, n, f(by[n]!), bound(n)));
  };
  const perS = (x: M) => x.load.perS;
  const plainCpu = ['Rota absolute-URI GET', subjectCpu(plain), { max: 2 }] as const;
  return [
    ...vs('GETs/s, 50 kept-alive conns', keep, perS, 3),
    ...vs('proxy CPU µs per GET', keep, subjectCpu),
    versus(S, 'proxy CPU µs per GET', subjectCpu(keep.Rota), ...plainCpu),
    alone(S, 'absolute-URI GETs/s, 50 conns', plain ? goodput(plain.load) : null),
    ...vs('new conns/s, 1 host (CONNECT, TLS, GET)', one, perS),
    ...vs('proxy CPU µs per new conn, 1 host', one, subjectCpu),
    ...vs('new conns/s, 1,000 hosts, a leaf each', many, perS),
    ...vs('proxy CPU µs per new conn, 1,000 hosts', many, subjectCpu),
  ];
}
