import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { projectRoot } from '../lib/root.ts';
import { VERSION } from '../version.ts';
import { type DocsOptions, polishDocument } from './openapi-polish.ts';
import { DOCS_CSP } from './security-headers.ts';
import { registerSwaggerUi, swaggerUiFolder } from './swagger-ui.ts';

export { BODY_OPTIONAL, type DocsOptions, operationIdFor, polishDocument } from './openapi-polish.ts';

const require = createRequire(join(projectRoot(), 'package.json'));

const REDOC_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Rota API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" type="image/png" href="/docs/static/favicon-32x32.png">
</head>
<body>
<redoc spec-url="/openapi.json"></redoc>
<script src="/redoc/redoc.standalone.js"></script>
</body>
</html>
`;

/**
 * ReDoc's sidebar footer always loads its maker's logo from a CDN (no option turns it off). On a machine
 * with no network that is a failed request and a CSP violation, so the bundle we serve points it at a
 * small inline mark instead.
 */
const REDOC_CDN_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';
const LOCAL_MARK =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='16' height='16' viewBox='0 0 16 16'%3E" +
  "%3Ccircle cx='8' cy='8' r='6' fill='%2332329f'/%3E%3C/svg%3E";

/**
 * OpenAPI document, Swagger UI and ReDoc, all served from this process: the docs must work on a machine
 * with no network, so no asset comes from a CDN.
 */
export async function registerDocs(app: FastifyInstance, opts: DocsOptions): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Rota',
        version: VERSION,
        description: 'Rotating proxy gateway: pool, rotation, failover, circuit breakers, health checks.',
      },
    },
    // Shared schemas keep their `$id` as component name (`Proxy`, `Meta`) rather than `def-0`.
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) =>
        typeof json.$id === 'string' ? json.$id : `def-${i}`,
    },
    transformObject: (d) => polishDocument('openapiObject' in d ? d.openapiObject : d.swaggerObject, opts),
  });

  const swaggerUiFiles = swaggerUiFolder();
  registerSwaggerUi(app, swaggerUiFiles);
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  registerRedoc(app, join(swaggerUiFiles, 'favicon-32x32.png'));
}

function registerRedoc(app: FastifyInstance, faviconPath: string): void {
  // The production build copies the one file served from the redoc package into dist/assets, so that a
  // production install need not carry the package (React, mobx, core-js: ~60 MB) to serve it.
  const built = join(projectRoot(), 'dist', 'assets', 'redoc.standalone.js');
  const redocPath = existsSync(built) ? built : require.resolve('redoc/bundles/redoc.standalone.js');
  let redocJs: string | null = null;
  let favicon: Buffer | null = null;

  app.get('/redoc', { schema: { hide: true } }, async (_req, reply) => {
    reply.header('content-security-policy', DOCS_CSP).type('text/html; charset=utf-8');
    return REDOC_HTML;
  });
  app.get('/redoc/redoc.standalone.js', { schema: { hide: true } }, async (_req, reply) => {
    redocJs ??= (await readFile(redocPath, 'utf8')).split(REDOC_CDN_LOGO).join(LOCAL_MARK);
    reply.type('application/javascript; charset=utf-8').header('cache-control', 'public, max-age=86400');
    return redocJs;
  });
  // Browsers ask for it on any page without an icon link (e.g. /openapi.json opened directly).
  app.get('/favicon.ico', { schema: { hide: true } }, async (_req, reply) => {
    favicon ??= await readFile(faviconPath);
    reply.type('image/png').header('cache-control', 'public, max-age=86400');
    return favicon;
  });
}
