import cluster from 'node:cluster';
import ipaddr from 'ipaddr.js';
import { buildApp } from './app.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';
import { boundDoor, logListening } from './lib/listen-log.ts';
import { createLogger } from './lib/logger.ts';
import { logConnectionLimits } from './net/connections.ts';
import { compileCacheAfterReady } from './runtime/compile-cache.ts';
import { processHeapTrimmer } from './runtime/heap-trim.ts';
import { trickOn } from './runtime/tricks.ts';
import { createServices } from './services.ts';
import { clusterRenderer, isWorker } from './workers/metrics-ipc.ts';
import { runPrimary } from './workers/primary.ts';

function loadOrExit(): Config {
  try {
    return loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      for (const p of e.problems) process.stderr.write(`CONFIGURATION_ERROR ${p}\n`);
      process.exit(2);
    }
    throw e;
  }
}

async function main(): Promise<void> {
  const config = loadOrExit();
  if (config.workers > 1 && cluster.isPrimary) {
    runPrimary(config, (line) => process.stderr.write(`${line}\n`));
    return;
  }
  const logger = createLogger(config.logLevel);
  const services = await createServices(config, logger);
  if (isWorker()) services.prom.setRenderer(clusterRenderer(services.prom.registry));
  const app = await buildApp(services, config);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    // Refuse new work, let in-flight requests finish, then close storage (flushes SQLite).
    const force = setTimeout(() => {
      logger.error('shutdown took too long; exiting');
      process.exit(1);
    }, 15_000);
    force.unref();
    try {
      // The API and the listeners stop accepting together; open tunnels get up to 10 s (services.close).
      await Promise.all([app.close(), services.listeners.close()]);
      await services.close();
    } finally {
      logger.flush();
      process.exit(0);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  await app.listen({ host: config.host, port: config.port });
  try {
    await services.listeners.start();
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    process.stderr.write(
      `LISTENER_ERROR cannot listen on ROTA_PROXY_PORT ${config.proxyPort} / ROTA_SOCKS_PORT ${config.socksPort}: ${String(code ?? err)}\n`,
    );
    process.exit(2);
  }
  // One line per door with the address it is bound to (the real port, also when 0 was asked for).
  logListening(logger, [boundDoor('api', app.server.address()), ...services.listeners.info()]);
  logConnectionLimits(logger, services.connections.limits);
  // Start-up's garbage and an idle young generation go back to the system in the first quiet second
  // (after traffic, only after 30 s of quiet: runtime/heap-trim.ts; proxied calls tell traffic from start-up).
  if (trickOn('heap-trim')) processHeapTrimmer(() => services.stats.totals().calls).start();
  // What start-up compiled goes to the cache now, not only at exit (a SIGKILL would lose it).
  setImmediate(compileCacheAfterReady);
  if (!config.requireAuth && !isLoopback(config.host)) {
    logger.warn(
      { host: config.host },
      'authentication is off on a non-loopback address: Rota is an open relay',
    );
  }
}

/** Only a loopback listener is private by construction; a name other than localhost may resolve anywhere. */
function isLoopback(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  const bare = host.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(bare)) return false;
  const a = ipaddr.parse(bare);
  const v4 =
    a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress() ? (a as ipaddr.IPv6).toIPv4Address() : a;
  return v4.range() === 'loopback';
}

main().catch((err: unknown) => {
  // Errors with a stable code (storage key, migrations) are operator errors: say what, not where.
  const code = (err as { code?: unknown } | null)?.code;
  if (err instanceof Error && typeof code === 'string' && code.startsWith('STORAGE_')) {
    process.stderr.write(`${code} ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
