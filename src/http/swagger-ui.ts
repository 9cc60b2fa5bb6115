/*
 * Swagger UI at /docs, served by Rota itself from files taken out of their package at build time.
 *
 *   GET /docs, /docs/                       the page (its links point at /docs/static/)
 *   GET /docs/static/swagger-initializer.js Rota's own start script: the document at /docs/json
 *   GET /docs/static/<file>                 one of the files of SWAGGER_UI_FILES, read on each ask
 *   GET /docs/static/index.html             redirects to the page (where Swagger UI's own links lead)
 *   GET /docs/json, /docs/yaml              the OpenAPI document (@fastify/swagger builds it)
 *
 * Why not @fastify/swagger-ui: at run time it brings @fastify/static (and its glob, send, mime) only to
 * serve these few files, ~40 ms of every start-up (median to the first /ready 389 → 352 ms without it, in
 * an interleaved A/B of the two builds, 10 starts each) and a package tree
 * in every production install. The build (scripts/build.ts) copies the files into dist/assets/swagger-ui;
 * a run from the sources (dev, tests) reads them from the package, a dev dependency. A file is looked up
 * in a fixed table, never joined from the request, so no path reaches the file system.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { projectRoot } from '../lib/root.ts';
import { DOCS_CSP } from './security-headers.ts';

/** The files of Swagger UI's bundle the page loads, with their media types. */
export const SWAGGER_UI_FILES: Readonly<Record<string, string>> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'index.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'application/javascript; charset=utf-8',
  'swagger-ui-standalone-preset.js': 'application/javascript; charset=utf-8',
  'oauth2-redirect.html': 'text/html; charset=utf-8',
  'oauth2-redirect.js': 'application/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

/** Where the build puts the files (relative to the project root). */
export const SWAGGER_UI_BUILT = join('dist', 'assets', 'swagger-ui');

/** The folder holding the files: the build's copy, else the package's own (a run from the sources). */
export function swaggerUiFolder(root: string = projectRoot()): string {
  const built = join(root, SWAGGER_UI_BUILT);
  if (existsSync(join(built, 'swagger-ui-bundle.js'))) return built;
  const require = createRequire(join(root, 'package.json'));
  try {
    return join(dirname(require.resolve('@fastify/swagger-ui')), 'static');
  } catch {
    return built; // neither: each file answers 404 with the reason in the log
  }
}

function page(prefix: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Rota API: Swagger UI</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${prefix}/swagger-ui.css">
<link rel="stylesheet" href="${prefix}/index.css">
<link rel="icon" type="image/png" href="${prefix}/favicon-32x32.png" sizes="32x32">
<link rel="icon" type="image/png" href="${prefix}/favicon-16x16.png" sizes="16x16">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${prefix}/swagger-ui-bundle.js" charset="utf-8"></script>
<script src="${prefix}/swagger-ui-standalone-preset.js" charset="utf-8"></script>
<script src="${prefix}/swagger-initializer.js" charset="utf-8"></script>
</body>
</html>
`;
}

/**
 * The document and the OAuth redirect page are found from the page's own address (with or without its
 * trailing slash), so the UI works behind a reverse proxy that mounts Rota under a path.
 */
const INITIALIZER = `window.addEventListener('load', function () {
  var base = window.location.href.split('#')[0].split('?')[0];
  if (base.slice(-1) !== '/') base += '/';
  window.ui = SwaggerUIBundle({
    url: new URL('json', base).href,
    oauth2RedirectUrl: new URL('static/oauth2-redirect.html', base).href,
    dom_id: '#swagger-ui',
    deepLinking: true,
    displayOperationId: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: 'StandaloneLayout'
  });
});
`;

const HIDDEN = { schema: { hide: true } } as const;

function docsReply(reply: FastifyReply, type: string): FastifyReply {
  return reply.header('content-security-policy', DOCS_CSP).type(type);
}

export function registerSwaggerUi(app: FastifyInstance, folder: string = swaggerUiFolder()): void {
  // The page's links are relative to where it was asked for: /docs/ → ./static, /docs → /docs/static.
  app.get('/docs', HIDDEN, async (req, reply) => {
    const slash = (req.url.split('?')[0] ?? '').endsWith('/');
    return docsReply(reply, 'text/html; charset=utf-8').send(page(slash ? './static' : '/docs/static'));
  });
  app.get('/docs/static/index.html', HIDDEN, async (_req, reply) => reply.redirect('/docs/'));
  app.get('/docs/static/swagger-initializer.js', HIDDEN, async (_req, reply) =>
    docsReply(reply, 'application/javascript; charset=utf-8').send(INITIALIZER),
  );
  // Read on every ask, not kept: browsers keep them a day, and a process whose docs were opened once
  // should not hold 1.5 MB of them for good.
  app.get<{ Params: { file: string } }>('/docs/static/:file', HIDDEN, async (req, reply) => {
    const name = req.params.file;
    const type = Object.hasOwn(SWAGGER_UI_FILES, name) ? SWAGGER_UI_FILES[name] : undefined;
    if (type === undefined) return reply.callNotFound();
    let body: Buffer;
    try {
      body = await readFile(join(folder, name));
    } catch (err) {
      req.log.warn({ file: name, code: (err as NodeJS.ErrnoException).code }, 'Swagger UI file missing');
      return reply.callNotFound();
    }
    return docsReply(reply, type).header('cache-control', 'public, max-age=86400').send(body);
  });
  app.get('/docs/json', HIDDEN, async (_req, reply) =>
    docsReply(reply, 'application/json; charset=utf-8').send(app.swagger()),
  );
  app.get('/docs/yaml', HIDDEN, async (_req, reply) =>
    docsReply(reply, 'application/x-yaml; charset=utf-8').send(app.swagger({ yaml: true })),
  );
}
