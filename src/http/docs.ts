import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { VERSION } from '../version.ts';
import { DOCS_CSP } from './security-headers.ts';

const require = createRequire(import.meta.url);

const REDOC_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Rota API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
</head>
<body>
<redoc spec-url="/openapi.json"></redoc>
<script src="/redoc/redoc.standalone.js"></script>
</body>
</html>
`;

/**
 * OpenAPI document, Swagger UI and ReDoc, all served from this process: the docs must work on a machine
 * with no network, so no asset comes from a CDN.
 */
export async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Rota',
        version: VERSION,
        description: 'Rotating proxy gateway: pool, rotation, failover, circuit breakers, health checks.',
      },
      components: {
        securitySchemes: {
          ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          Bearer: { type: 'http', scheme: 'bearer' },
        },
      },
      security: [{ ApiKey: [] }, { Bearer: [] }],
    },
  });

  await app.register(swaggerUi, {
    routePrefix: '/docs',
    validatorUrl: false,
    uiConfig: { url: '/openapi.json' },
    staticCSP: false,
    uiHooks: {
      onRequest: (_req, reply, done) => {
        reply.header('content-security-policy', DOCS_CSP);
        done();
      },
    },
  });

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  const redocPath = require.resolve('redoc/bundles/redoc.standalone.js');
  let redocJs: Buffer | null = null;
  app.get('/redoc', { schema: { hide: true } }, async (_req, reply) => {
    reply.header('content-security-policy', DOCS_CSP).type('text/html; charset=utf-8');
    return REDOC_HTML;
  });
  app.get('/redoc/redoc.standalone.js', { schema: { hide: true } }, async (_req, reply) => {
    redocJs ??= await readFile(redocPath);
    reply.type('application/javascript; charset=utf-8').header('cache-control', 'public, max-age=86400');
    return redocJs;
  });
}
