import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function run(env: Record<string, string>) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('ROTA_')));
  return spawnSync(process.execPath, ['src/main.ts'], {
    cwd: ROOT,
    env: { ...base, ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
}

describe('start-up with a bad configuration (real process)', () => {
  it('exits 2 with one CONFIGURATION_ERROR line per problem, naming the variable', () => {
    const r = run({ ROTA_PORT: 'eighty', ROTA_TIMEOUT: '999', ROTA_REQUIRE_AUTH: 'true', ROTA_API_KEY: '' });
    assert.equal(r.status, 2, r.stderr);
    const lines = r.stderr
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('CONFIGURATION_ERROR'));
    assert.equal(lines.length, 3, r.stderr);
    assert.ok(lines.some((l) => l.includes('ROTA_PORT')));
    assert.ok(lines.some((l) => l.includes('ROTA_TIMEOUT')));
    assert.ok(lines.some((l) => l.includes('ROTA_API_KEY')));
  });

  it('exits 2 for a wildcard CORS origin with credentials', () => {
    const r = run({ ROTA_CORS_ORIGINS: '*', ROTA_PORT: '0' });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /CONFIGURATION_ERROR ROTA_CORS_ORIGINS/);
  });
});
