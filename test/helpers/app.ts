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

/** Tests make many requests from one address; rate-limit tests set their own limits. */
export const GENEROUS_LIMITS: Readonly<Record<string, string>> = {
  ROTA_RATE_LIMIT: '100000/minute',
  ROTA_RATE_LIMIT_REQUEST: '100000/minute',
  ROTA_RATE_LIMIT_ADD_PROXY: '100000/minute',
  ROTA_RATE_LIMIT_CONFIG: '100000/minute',
  ROTA_RATE_LIMIT_RESET: '100000/minute',
  ROTA_RATE_LIMIT_HEALTH_CHECK: '100000/minute',
  ROTA_AUTH_FAILURE_LIMIT: '100000/minute',
};

/** Builds the real app over real services, with logs captured in memory. */
export async function makeApp(
  env: Record<string, string> = {},
  overrides: ServiceOverrides = {},
): Promise<TestApp> {
  const config = loadConfig({ ROTA_LOG_LEVEL: 'info', ...GENEROUS_LIMITS, ...env });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line) logs.push(line);
      cb();
    },
  });
  const logger = pino({ level: config.logLevel }, sink);
  const services = await createServices(config, logger, { processMetrics: false, ...overrides });
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
