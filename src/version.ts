import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from './lib/root.ts';

/** The package version: `meta.version` and the health response. Read once at start-up. */
export const VERSION: string = (
  JSON.parse(readFileSync(join(projectRoot(), 'package.json'), 'utf8')) as { version: string }
).version;
