import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { buildApp } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { createServices, type ServiceOverrides, type Services } from '../../src/services.ts';

export interface TestApp {
  app: FastifyInstance;
  services: Services;
  /** Every log line written so far (JSON text), for secret-leak and audit assertions. */
  logs: string[];
  close(): Promise<void>;
}

/** Builds the real app over real services, with logs captured in memory. */
export async function makeApp(
  env: Record<string, string> = {},
  overrides: ServiceOverrides = {},
): Promise<TestApp> {
  const config = loadConfig({ ROTA_LOG_LEVEL: 'info', ...env });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(line);
      cb();
    },
  });
  const logger = pino({ level: config.logLevel }, sink);
  const services = await createServices(config, logger, overrides);
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

export function json(body: unknown) {
  return { headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) };
}
