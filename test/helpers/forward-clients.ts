import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Real clients of a forward proxy, run as child processes: the curl CLI and Python's `requests` (Debian's
 * python3-requests, run by /usr/bin/python3 because a pyenv python3 may come first on PATH). Both get an
 * environment without *_proxy variables, so that only the proxy a test names is used.
 */

const CURL = '/usr/bin/curl';
const PYTHON = '/usr/bin/python3';

export function requireFile(path: string, what: string): void {
  if (!existsSync(path)) throw new Error(`${path} is missing: ${what} (scripts/system-deps.sh installs it)`);
}

function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !/_proxy$/i.test(k)));
}

export interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function run(cmd: string, args: readonly string[], input = '', timeoutMs = 30_000): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => {
      stdout += b.toString('utf8');
    });
    child.stderr.on('data', (b: Buffer) => {
      stderr += b.toString('utf8');
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr: signal ? `${stderr}[${signal}]` : stderr });
    });
    child.stdin.end(input);
  });
}

/** One header block as curl wrote it with -D: a CONNECT answer from the proxy, a 100, or the response. */
export interface HeaderBlock {
  readonly status: number;
  /** Lower-case names; repeated headers joined with ', '. */
  readonly headers: Readonly<Record<string, string>>;
}

export interface CurlResult {
  /** curl's exit code: 0 ok, 7 cannot connect, 56 proxy CONNECT refused, 97 SOCKS auth failed, ... */
  readonly code: number;
  /** Status and headers of the last block: the target's response (or the proxy's refusal). */
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Every block in order; with CONNECT the first one is the proxy's answer to CONNECT. */
  readonly blocks: readonly HeaderBlock[];
  readonly body: string;
  readonly stderr: string;
}

export interface CurlOptions {
  /** `-x` value: `http://127.0.0.1:P`, `socks5h://user:pass@127.0.0.1:P`, ... */
  readonly proxy?: string;
  /** `--socks5-hostname 127.0.0.1:P`: the proxy resolves the target's name. */
  readonly socks5Hostname?: string;
  /** `--proxy-user user:password` (HTTP Basic for an HTTP proxy, RFC 1929 for SOCKS5). */
  readonly proxyUser?: string;
  /** PEM text of the CA that signed an HTTPS target (written to a file for --cacert). */
  readonly ca?: string;
  /** `-k`: accept any certificate from the target. */
  readonly insecure?: boolean;
  readonly timeoutS?: number;
  readonly extraArgs?: readonly string[];
}

export function parseHeaderBlocks(raw: string): HeaderBlock[] {
  const blocks: HeaderBlock[] = [];
  for (const text of raw.split(/\r?\n\r?\n/)) {
    const lines = text.split(/\r?\n/).filter((l) => l.length > 0);
    const statusLine = /^HTTP\/[\d.]+ (\d{3})/.exec(lines[0] ?? '');
    if (!statusLine) continue;
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    blocks.push({ status: Number(statusLine[1]), headers });
  }
  return blocks;
}

/** Runs the curl CLI once against `url` through the proxy the options name. Never throws on a failure. */
export async function curl(url: string, opts: CurlOptions = {}): Promise<CurlResult> {
  requireFile(CURL, 'install the Debian package curl');
  const dir = await mkdtemp(join(tmpdir(), 'rota-curl-'));
  try {
    const headerFile = join(dir, 'headers');
    const bodyFile = join(dir, 'body');
    const args = ['-sS', '--max-time', String(opts.timeoutS ?? 20), '-D', headerFile, '-o', bodyFile];
    if (opts.proxy) args.push('-x', opts.proxy);
    if (opts.socks5Hostname) args.push('--socks5-hostname', opts.socks5Hostname);
    if (opts.proxyUser) args.push('--proxy-user', opts.proxyUser);
    if (opts.ca) {
      const caFile = join(dir, 'ca.pem');
      await writeFile(caFile, opts.ca);
      args.push('--cacert', caFile);
    }
    if (opts.insecure) args.push('-k');
    args.push(...(opts.extraArgs ?? []), url);
    const r = await run(CURL, args, '', ((opts.timeoutS ?? 20) + 5) * 1000);
    const read = (f: string) => readFile(f, 'utf8').catch(() => '');
    const blocks = parseHeaderBlocks(await read(headerFile));
    const last = blocks.at(-1);
    return {
      code: r.code,
      status: last?.status ?? 0,
      headers: last?.headers ?? {},
      blocks,
      body: await read(bodyFile),
      stderr: r.stderr,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface PyResult {
  readonly status: number;
  /** Lower-case names, as `requests` merged them. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** `ProxyError: ...` and the like when requests raised; then status is 0. */
  readonly error: string | null;
}

export interface PyOptions {
  /** Proxy URL used for both http and https targets, e.g. `http://user:pass@127.0.0.1:P`. */
  readonly proxy: string;
  /** PEM text of the CA to verify an HTTPS target with; without it verification is off. */
  readonly ca?: string;
  readonly timeoutS?: number;
}

// trust_env off: no proxy or CA settings from the environment or ~/.netrc, only what the test passes.
const PY_SCRIPT = `
import json, sys, warnings
import requests
warnings.filterwarnings('ignore')
a = json.load(sys.stdin)
s = requests.Session()
s.trust_env = False
try:
    r = s.get(a['url'], proxies={'http': a['proxy'], 'https': a['proxy']}, verify=a['verify'], timeout=a['timeout'])
    out = {'status': r.status_code, 'headers': {k.lower(): v for k, v in r.headers.items()}, 'body': r.text, 'error': None}
except Exception as e:
    out = {'status': 0, 'headers': {}, 'body': '', 'error': type(e).__name__ + ': ' + str(e)}
json.dump(out, sys.stdout)
`;

/** `requests.get(url, proxies={'http': P, 'https': P}, verify=CA file or False, timeout=...)`. */
export async function pythonGet(url: string, opts: PyOptions): Promise<PyResult> {
  requireFile(PYTHON, "install Debian's python3 and python3-requests");
  const dir = await mkdtemp(join(tmpdir(), 'rota-py-'));
  try {
    let verify: string | false = false;
    if (opts.ca) {
      verify = join(dir, 'ca.pem');
      await writeFile(verify, opts.ca);
    }
    const timeout = opts.timeoutS ?? 20;
    const input = JSON.stringify({ url, proxy: opts.proxy, verify, timeout });
    const r = await run(PYTHON, ['-c', PY_SCRIPT], input, (timeout + 10) * 1000);
    if (r.code !== 0) throw new Error(`python3 failed (${r.code}): ${r.stderr}`);
    return JSON.parse(r.stdout) as PyResult;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The path the target fixture's /echo route saw (query included). */
export function echoPath(r: { readonly body: string }): string {
  return (JSON.parse(r.body) as { path: string }).path;
}

/** curl exited 0 with a 200 as the last answer. */
export function assertCurlOk(r: CurlResult, what: string): void {
  assert.equal(r.code, 0, `${what}: curl exit ${r.code}: ${r.stderr}`);
  assert.equal(r.status, 200, what);
}

/** X-Rota-Proxy-Id of the first answer: the response to an absolute URI, or the answer to CONNECT. */
export function proxyIdOf(r: CurlResult): string | undefined {
  return r.blocks[0]?.headers['x-rota-proxy-id'];
}

export interface PySessionAnswer {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  /** Hex SHA-256 of the body as received, and its length in bytes. */
  readonly sha256: string;
  readonly length: number;
  readonly error: string | null;
}

// One requests.Session for every URL: its connection pool keeps one (tunnelled) connection per host.
const PY_SESSION_SCRIPT = `
import hashlib, json, sys, warnings
import requests
warnings.filterwarnings('ignore')
a = json.load(sys.stdin)
s = requests.Session()
s.trust_env = False
s.proxies = {'http': a['proxy'], 'https': a['proxy']}
s.verify = a['verify']
s.headers.update(a['headers'])
out = []
for url in a['urls']:
    try:
        r = s.get(url, timeout=a['timeout'])
        out.append({'status': r.status_code, 'headers': {k.lower(): v for k, v in r.headers.items()},
                    'sha256': hashlib.sha256(r.content).hexdigest(), 'length': len(r.content), 'error': None})
    except Exception as e:
        out.append({'status': 0, 'headers': {}, 'sha256': '', 'length': 0, 'error': type(e).__name__ + ': ' + str(e)})
s.close()
json.dump(out, sys.stdout)
`;

/** `requests.Session()` fetching every URL in turn through `opts.proxy`, with `headers` on each request. */
export async function pythonSession(
  urls: readonly string[],
  opts: PyOptions & { readonly headers?: Readonly<Record<string, string>> },
): Promise<PySessionAnswer[]> {
  requireFile(PYTHON, "install Debian's python3 and python3-requests");
  const dir = await mkdtemp(join(tmpdir(), 'rota-py-'));
  try {
    let verify: string | false = false;
    if (opts.ca) {
      verify = join(dir, 'ca.pem');
      await writeFile(verify, opts.ca);
    }
    const timeout = opts.timeoutS ?? 20;
    const input = JSON.stringify({ urls, proxy: opts.proxy, verify, timeout, headers: opts.headers ?? {} });
    const r = await run(PYTHON, ['-c', PY_SESSION_SCRIPT], input, (timeout * urls.length + 10) * 1000);
    if (r.code !== 0) throw new Error(`python3 failed (${r.code}): ${r.stderr}`);
    return JSON.parse(r.stdout) as PySessionAnswer[];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
