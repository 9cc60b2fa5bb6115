import { readFileSync } from 'node:fs';

/** The package version: `meta.version` and the health response. Read once at start-up. */
export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
