import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project's root folder, found by walking up from this module to the package.json named "rota".
 * The same answer whether Rota runs from its sources (src/lib/root.ts) or from the production bundle
 * (dist/main.js), so files beside the code (package.json, built assets) are found from either.
 */
export function projectRoot(from: string = fileURLToPath(import.meta.url)): string {
  let dir = dirname(from);
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'rota')
      return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('rota: package.json not found above the running code');
    dir = up;
  }
}
