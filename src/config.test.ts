import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from './config.ts';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    assert.ok(e instanceof ConfigError);
    return [...e.problems];
  }
  assert.fail('expected a ConfigError');
}

describe('config', () => {
  it('has the documented defaults and is frozen', () => {
    const c = loadConfig({});
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.port, 8000);
    assert.equal(c.strategy, 'round-robin');
    assert.equal(c.timeoutS, 30);
    assert.equal(c.maxRetries, 3);
    assert.deepEqual(c.rateLimit, { limit: 100, windowMs: 60_000 });
    assert.deepEqual(c.apiKeyRateLimit, c.rateLimit);
    assert.equal(c.routeRateLimits.request.limit, 50);
    assert.equal(c.routeRateLimits.addProxy.limit, 10);
    assert.equal(c.routeRateLimits.config.limit, 5);
    assert.equal(c.routeRateLimits.reset.limit, 10);
    assert.equal(c.auditLog, true);
    assert.equal(c.maxBodyBytes, 1_048_576);
    assert.equal(c.maxResponseBytes, 10_485_760);
    assert.equal(c.corsAllowCredentials, true);
    assert.equal(c.clientIpHeader, 'x-forwarded-for');
    assert.equal(c.breaker.failureThreshold, 5);
    assert.equal(c.hedgeDelayS, 1);
    assert.equal(loadConfig({ ROTA_HEDGE_DELAY_S: '0' }).hedgeDelayS, 0, '0 turns hedging off');
    assert.equal(c.proxyPort, 8080);
    assert.equal(c.socksPort, 1080);
    assert.equal(c.tunnelIdleTimeoutS, 300);
    const off = loadConfig({ ROTA_PROXY_PORT: '0', ROTA_SOCKS_PORT: '0' });
    assert.equal(off.proxyPort + off.socksPort, 0, '0 turns a listener off');
    assert.ok(Object.isFrozen(c) && Object.isFrozen(c.breaker) && Object.isFrozen(c.corsOrigins));
    assert.throws(() => {
      (c as { port: number }).port = 1;
    });
  });

  it('refuses listener ports that collide or are out of range, naming the variables', () => {
    assert.throws(
      () => loadConfig({ ROTA_PORT: '9000', ROTA_PROXY_PORT: '9000', ROTA_SOCKS_PORT: '70000' }),
      (e: ConfigError) =>
        e.problems.some((p) => p.startsWith('ROTA_SOCKS_PORT')) &&
        e.problems.some((p) => p.includes('ROTA_PROXY_PORT') && p.includes('port of its own')),
    );
    assert.throws(() => loadConfig({ ROTA_TUNNEL_IDLE_TIMEOUT_S: '0' }), /ROTA_TUNNEL_IDLE_TIMEOUT_S/);
  });

  it('parses lists, rates, booleans and the secret key', () => {
    const c = loadConfig({
      ROTA_CORS_ORIGINS: 'https://a.example, https://b.example',
      ROTA_RATE_LIMIT: '200/hour',
      ROTA_REQUIRE_AUTH: 'yes',
      ROTA_API_KEY: 'k',
      ROTA_TRUSTED_PROXIES: '10.0.0.0/8,::1',
      ROTA_SECRET_KEY: 'a'.repeat(64),
      ROTA_STRATEGY: 'least-used',
    });
    assert.deepEqual(c.corsOrigins, ['https://a.example', 'https://b.example']);
    assert.deepEqual(c.rateLimit, { limit: 200, windowMs: 3_600_000 });
    assert.equal(c.requireAuth, true);
    assert.deepEqual(c.trustedProxies, ['10.0.0.0/8', '::1/128']);
    assert.equal(c.secretKey?.length, 32);
    assert.equal(c.strategy, 'least-used');
  });

  it('reports every bad value at once, naming each variable', () => {
    const problems = problemsOf({
      ROTA_PORT: '99999',
      ROTA_TIMEOUT: '0',
      ROTA_MAX_RETRIES: 'many',
      ROTA_STRATEGY: 'fastest',
      ROTA_RATE_LIMIT: '100 per minute',
      ROTA_REQUIRE_AUTH: 'maybe',
      ROTA_TRUSTED_PROXIES: 'not-a-cidr',
      ROTA_HEALTH_CHECK_URL: 'ftp://x',
      ROTA_SECRET_KEY: 'short',
      ROTA_LOG_LEVEL: 'loud',
      ROTA_HEDGE_DELAY_S: '-1',
    });
    const named = problems.map((p) => p.split(':')[0]);
    for (const v of [
      'ROTA_PORT',
      'ROTA_TIMEOUT',
      'ROTA_MAX_RETRIES',
      'ROTA_STRATEGY',
      'ROTA_RATE_LIMIT',
      'ROTA_REQUIRE_AUTH',
      'ROTA_TRUSTED_PROXIES',
      'ROTA_HEALTH_CHECK_URL',
      'ROTA_SECRET_KEY',
      'ROTA_LOG_LEVEL',
      'ROTA_HEDGE_DELAY_S',
    ]) {
      assert.ok(named.includes(v), `${v} missing from ${JSON.stringify(problems)}`);
    }
    assert.ok(!problems.join('\n').includes('short'), 'the secret key value is never echoed');
  });

  it('reads the session defaults and the challenge switch, and names a bad value', () => {
    const d = loadConfig({});
    assert.deepEqual(d.sessions, {
      idleTtlS: 600,
      maxTtlS: 0,
      maxRequests: 0,
      scope: 'all',
      onBan: 'rotate',
    });
    assert.equal(d.proxyChallenge, false);
    const c = loadConfig({
      ROTA_SESSION_SCOPE: 'host',
      ROTA_SESSION_ON_BAN: 'keep',
      ROTA_PROXY_CHALLENGE: 'true',
    });
    assert.equal(c.sessions.scope, 'host');
    assert.equal(c.sessions.onBan, 'keep');
    assert.equal(c.proxyChallenge, true);
    const problems = problemsOf({
      ROTA_SESSION_SCOPE: 'site',
      ROTA_SESSION_ON_BAN: 'drop',
      ROTA_SESSION_IDLE_TTL_S: '0',
    });
    assert.equal(problems.length, 3, problems.join('\n'));
    assert.ok(problems.some((p) => p.startsWith('ROTA_SESSION_SCOPE: expected one of all, host')));
    assert.ok(problems.some((p) => p.startsWith('ROTA_SESSION_ON_BAN: expected one of rotate, keep')));
    assert.ok(problems.some((p) => p.startsWith('ROTA_SESSION_IDLE_TTL_S')));
  });

  it('refuses auth without a key, and a wildcard origin with credentials', () => {
    assert.deepEqual(
      problemsOf({ ROTA_REQUIRE_AUTH: 'true' }).map((p) => p.split(':')[0]),
      ['ROTA_API_KEY'],
    );
    assert.deepEqual(
      problemsOf({ ROTA_CORS_ORIGINS: '*' }).map((p) => p.split(':')[0]),
      ['ROTA_CORS_ORIGINS'],
    );
    assert.equal(
      loadConfig({ ROTA_CORS_ORIGINS: '*', ROTA_CORS_ALLOW_CREDENTIALS: 'false' }).corsOrigins[0],
      '*',
    );
  });

  it('refuses several workers without shared state and a shared pool', () => {
    const problems = problemsOf({ ROTA_WORKERS: '2' });
    assert.ok(problems.some((p) => p.includes('ROTA_REDIS_URL')));
    assert.ok(problems.some((p) => p.includes('ROTA_STORAGE_PATH or ROTA_DATABASE_URL')));
    const ok = loadConfig({
      ROTA_WORKERS: '2',
      ROTA_REDIS_URL: 'redis://127.0.0.1:6379',
      ROTA_STORAGE_PATH: '/tmp/x.db',
    });
    assert.equal(ok.workers, 2);
  });

  it('reads the connection caps: 256 per address, the total from the open-file limit unless set', () => {
    const c = loadConfig({});
    assert.equal(c.maxConnectionsPerIp, 256);
    assert.equal(c.maxConnections, null, 'null: half the open-file limit, read at start');
    const set = loadConfig({ ROTA_MAX_CONNECTIONS_PER_IP: '8', ROTA_MAX_CONNECTIONS: '100' });
    assert.deepEqual([set.maxConnectionsPerIp, set.maxConnections], [8, 100]);
    const problems = problemsOf({ ROTA_MAX_CONNECTIONS_PER_IP: '0', ROTA_MAX_CONNECTIONS: 'many' });
    assert.ok(problems.some((p) => p.startsWith('ROTA_MAX_CONNECTIONS_PER_IP:')));
    assert.ok(problems.some((p) => p.startsWith('ROTA_MAX_CONNECTIONS:')));
  });
});
