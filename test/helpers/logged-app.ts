import { Writable } from 'node:stream';
import pino from 'pino';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { loggerOptions } from '../../src/lib/logger.ts';
import { createServices } from '../../src/services.ts';
import { GENEROUS_LIMITS, type TestApp } from './app.ts';

/**
 * The real app over real services, logging at debug through the production logger's options
 * (src/lib/logger.ts: its redaction included) into memory, so that a test sees every line as written.
 */
export async function makeLoggedApp(env: Record<string, string> = {}): Promise<TestApp> {
  const config = loadConfig({ ...GENEROUS_LIMITS, ROTA_LOG_LEVEL: 'debug', ...env });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(line);
      cb();
    },
  });
  const logger = pino(loggerOptions(config.logLevel), sink);
  const services = await createServices(config, logger, { processMetrics: false });
  const app = await buildApp(services, config);
  await app.ready();
  return {
    app,
    services,
    logs,
    async close() {
      await app.close();
      await services.close();
    },
  };
}
