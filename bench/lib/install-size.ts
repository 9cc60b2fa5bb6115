import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from './proc.ts';
import { ROOT } from './rota.ts';

/**
 * The production install: package.json and package-lock.json copied into a temp folder and
 * `npm ci --omit=dev` run there with the npm of the Node that runs the harness (packages come from the
 * npm registry; install scripts run, as in the Dockerfile's deps stage). Then its size on disk
 * (`du -sk`, what `du -sh` shows), its apparent size, the packages in it and the largest ones.
 */
export interface InstallSize {
  readonly npmVersion: string;
  readonly diskMb: number;
  readonly apparentMb: number;
  readonly packages: number;
  /** The largest top-level packages, MB on disk. */
  readonly largest: readonly { readonly name: string; readonly mb: number }[];
  readonly seconds: number;
}

async function du(path: string, apparent: boolean): Promise<number> {
  const r = await run('du', [apparent ? '-sb' : '-sk', path], { timeoutMs: 120_000 });
  const n = Number(r.stdout.trim().split(/\s+/)[0]);
  if (r.code !== 0 || !Number.isFinite(n)) throw new Error(`du failed: ${r.stderr.slice(0, 200)}`);
  return apparent ? n / 2 ** 20 : n / 1024;
}

/** Package folders (node_modules/<name> and node_modules/@scope/<name>, nested ones too). */
function packageDirs(nodeModules: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(nodeModules, { withFileTypes: true })) {
    if (!e.isDirectory() || e.name.startsWith('.')) continue;
    const dirs = e.name.startsWith('@')
      ? readdirSync(join(nodeModules, e.name), { withFileTypes: true })
          .filter((s) => s.isDirectory())
          .map((s) => join(nodeModules, e.name, s.name))
      : [join(nodeModules, e.name)];
    for (const d of dirs) {
      if (!existsSync(join(d, 'package.json'))) continue;
      out.push(d);
      if (existsSync(join(d, 'node_modules'))) out.push(...packageDirs(join(d, 'node_modules')));
    }
  }
  return out;
}

async function largest(nodeModules: string): Promise<{ name: string; mb: number }[]> {
  const top = packageDirs(nodeModules).filter(
    (d) => !d.slice(nodeModules.length + 1).includes('node_modules'),
  );
  const sizes: { name: string; mb: number }[] = [];
  for (const d of top) sizes.push({ name: d.slice(nodeModules.length + 1), mb: await du(d, false) });
  return sizes.sort((a, b) => b.mb - a.mb).slice(0, 6);
}

export async function productionInstall(log: (m: string) => void): Promise<InstallSize> {
  const dir = mkdtempSync(join(tmpdir(), 'rota-prod-install-'));
  try {
    for (const f of ['package.json', 'package-lock.json']) copyFileSync(join(ROOT, f), join(dir, f));
    const npmVersion = (await run('npm', ['--version'], { timeoutMs: 30_000 })).stdout.trim();
    log(`  lean: npm ci --omit=dev in ${dir} (npm ${npmVersion}, from the npm registry)`);
    const t0 = performance.now();
    const r = await run('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund'], {
      cwd: dir,
      timeoutMs: 600_000,
    });
    if (r.code !== 0) throw new Error(`npm ci --omit=dev failed: ${(r.stderr || r.stdout).slice(-300)}`);
    const seconds = (performance.now() - t0) / 1000;
    const nm = join(dir, 'node_modules');
    return {
      npmVersion,
      diskMb: await du(nm, false),
      apparentMb: await du(nm, true),
      packages: packageDirs(nm).length,
      largest: await largest(nm),
      seconds,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
