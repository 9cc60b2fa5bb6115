import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DashboardAssets, OUTPUT_NAMES } from './dashboard-assets.ts';

/* The server serves the prebuilt web/dist and nothing else: it neither builds nor writes. */

describe('DashboardAssets', () => {
  it('missing files: a reason that says how to build; built files: served; rebuilt ones: re-read', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rota-dist-'));
    try {
      const assets = new DashboardAssets(dir);
      const none = await assets.current();
      assert.equal(none.ok, false);
      assert.match(none.ok ? '' : none.reason, /npm run build:web/);
      for (const n of OUTPUT_NAMES) await writeFile(join(dir, n), `v1 ${n}`);
      const one = await assets.current();
      assert.equal(one.ok && one.assets['dashboard.js'].raw.toString(), 'v1 dashboard.js');
      await writeFile(join(dir, 'dashboard.js'), 'v2');
      await utimes(join(dir, 'dashboard.js'), new Date(), new Date(Date.now() + 5_000));
      const two = await assets.current();
      assert.equal(two.ok && two.assets['dashboard.js'].raw.toString(), 'v2');
      assert.deepEqual((await readdir(dir)).sort(), [...OUTPUT_NAMES].sort(), 'nothing written beside them');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('no module of the server imports esbuild (building is scripts/web-bundle.ts, at build time)', async () => {
    const files = (await readdir(join(import.meta.dirname, '..'), { recursive: true })).filter(
      (f) => f.endsWith('.ts') && !f.endsWith('.test.ts'),
    );
    assert.ok(files.length > 100);
    for (const f of files) {
      const text = await readFile(join(import.meta.dirname, '..', f), 'utf8');
      assert.doesNotMatch(text, /from 'esbuild'|import\('esbuild'\)/, f);
    }
  });
});
