/**
 * Builds the dashboard bundle (web/src → web/dist, scripts/web-bundle.ts) and prints each file's size, raw
 * and gzipped. `npm test` and `npm start` run it; the server only serves what it built.
 *
 *   node scripts/build-web.ts            build and print sizes
 *   node scripts/build-web.ts --if-stale build only when web/dist is missing or older than web/src
 */
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import { buildBundle, isStale } from './web-bundle.ts';

const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;

async function main(): Promise<void> {
  if (process.argv.includes('--if-stale') && !(await isStale())) {
    console.log('web/dist is up to date');
    return;
  }
  const started = performance.now();
  const files = await buildBundle(esbuild);
  let raw = 0;
  let gz = 0;
  for (const [name, bytes] of files) {
    const zipped = gzipSync(bytes, { level: 9 }).length;
    raw += bytes.length;
    gz += zipped;
    console.log(
      `web/dist/${name.padEnd(15)} ${kb(bytes.length).padStart(9)} raw ${kb(zipped).padStart(9)} gzip`,
    );
  }
  console.log(`${'total'.padEnd(24)} ${kb(raw).padStart(9)} raw ${kb(gz).padStart(9)} gzip`);
  console.log(`built in ${Math.round(performance.now() - started)} ms`);
}

await main();
