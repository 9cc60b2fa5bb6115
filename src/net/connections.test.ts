import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import pino from 'pino';
import { Registry } from 'prom-client';
import { loadConfig } from '../config.ts';
import { createConnections, logConnectionLimits } from './connections.ts';

function logger(): { log: pino.Logger; lines: () => Record<string, unknown>[] } {
  const out: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      out.push(String(chunk));
      cb();
    },
  });
  return {
    log: pino({ level: 'info' }, sink),
    lines: () => out.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

describe('connections from the config', () => {
  it('defaults the total to half the soft open-file limit and logs the limits', () => {
    const { log, lines } = logger();
    const c = createConnections(loadConfig({}), log, new Registry(), { soft: 4096, hard: 4096 });
    assert.deepEqual(c.limits, {
      fd: { soft: 4096, hard: 4096 },
      maxConnections: 2048,
      maxConnectionsPerIp: 256,
      apiReserve: 32,
    });
    logConnectionLimits(log, c.limits);
    assert.deepEqual(
      lines().map((l) => [l.level, l.msg, l.open_files_soft, l.max_connections]),
      [[30, 'connection limits', 4096, 2048]],
    );
  });

  it('warns when the soft limit was not raised or the total leaves no room for upstream sockets', () => {
    const { log, lines } = logger();
    const config = loadConfig({ ROTA_MAX_CONNECTIONS: '900', ROTA_MAX_CONNECTIONS_PER_IP: '5' });
    const c = createConnections(config, log, new Registry(), { soft: 1024, hard: 4096 });
    assert.equal(c.limits.maxConnections, 900);
    assert.equal(c.limits.maxConnectionsPerIp, 5);
    logConnectionLimits(log, c.limits);
    assert.deepEqual(
      lines().map((l) => l.level),
      [30, 40, 40],
    );
  });

  it('counts ROTA_TRUSTED_PROXIES against the total only, and puts the counts on /metrics', async () => {
    const { log } = logger();
    const registry = new Registry();
    const config = loadConfig({ ROTA_MAX_CONNECTIONS_PER_IP: '1', ROTA_TRUSTED_PROXIES: '10.0.0.0/8' });
    const { guard } = createConnections(config, log, registry, null);
    const caps = guard.caps;
    assert.equal(caps.admit('10.1.2.3', 'api', '::ffff:10.1.2.3').type, 'admitted');
    assert.equal(caps.admit('10.1.2.3', 'api', '::ffff:10.1.2.3').type, 'admitted', 'a trusted proxy');
    assert.equal(caps.admit('192.0.2.1', 'http').type, 'admitted');
    assert.equal(caps.admit('192.0.2.1', 'http').type, 'refused');
    const text = await registry.metrics();
    assert.match(text, /rota_client_connections\{door="api"\} 2/);
    assert.match(text, /rota_client_connections\{door="http"\} 1/);
    assert.match(text, /rota_client_connections_refused_total\{door="http",reason="per_ip"\} 1/);
  });
});
