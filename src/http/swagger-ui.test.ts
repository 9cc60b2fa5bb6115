import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { DOCS_CSP } from './security-headers.ts';
import { registerSwaggerUi, SWAGGER_UI_BUILT, SWAGGER_UI_FILES, swaggerUiFolder } from './swagger-ui.ts';

/** A Fastify with the one decorator the docs routes use, standing in for @fastify/swagger. */
function appWith(folder: string): FastifyInstance {
  // As app.ts routes: /docs/ reaches the /docs route.
  const app = Fastify({ routerOptions: { ignoreTrailingSlash: true } });
  app.decorate('swagger', ((o?: { yaml?: boolean }) =>
    o?.yaml ? 'openapi: 3.1.0\n' : { openapi: '3.1.0' }) as FastifyInstance['swagger']);
  registerSwaggerUi(app, folder);
  return app;
}

describe('Swagger UI served by Rota', () => {
  let app: FastifyInstance;
  before(async () => {
    app = appWith(swaggerUiFolder());
    await app.ready();
  });
  after(() => app.close());

  it('serves the page at /docs and /docs/, its links where each resolves', async () => {
    for (const [url, prefix] of [
      ['/docs', '/docs/static/'],
      ['/docs/', './static/'],
      ['/docs/?x=1', './static/'],
    ] as const) {
      const res = await app.inject({ url });
      assert.equal(res.statusCode, 200, url);
      assert.match(String(res.headers['content-type']), /^text\/html/);
      assert.equal(res.headers['content-security-policy'], DOCS_CSP);
      for (const file of ['swagger-ui-bundle.js', 'swagger-initializer.js', 'swagger-ui.css'])
        assert.ok(res.body.includes(`"${prefix}${file}"`), `${url} links ${prefix}${file}`);
      assert.doesNotMatch(res.body, /https?:\/\//, 'nothing from elsewhere');
    }
  });

  it('serves every file of the table with its type, the CSP and a day of caching', async () => {
    for (const [name, type] of Object.entries(SWAGGER_UI_FILES)) {
      const res = await app.inject({ url: `/docs/static/${name}` });
      assert.equal(res.statusCode, 200, name);
      assert.equal(res.headers['content-type'], type, name);
      assert.equal(res.headers['content-security-policy'], DOCS_CSP, name);
      assert.equal(res.headers['cache-control'], 'public, max-age=86400', name);
      assert.ok(res.rawPayload.length > 100, `${name} has its content`);
    }
  });

  it('answers 404 for any other name, however it is spelled: nothing is joined from the request', async () => {
    for (const url of [
      '/docs/static/swagger-ui.js',
      '/docs/static/package.json',
      '/docs/static/..%2F..%2Fpackage.json',
      '/docs/static/../../package.json',
      '/docs/static/constructor',
      '/docs/static/__proto__',
      '/docs/static/logo.svg',
    ]) {
      const res = await app.inject({ url });
      assert.equal(res.statusCode, 404, url);
    }
  });

  it('starts the UI on the document beside the page, with no validator', async () => {
    const res = await app.inject({ url: '/docs/static/swagger-initializer.js' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/javascript/);
    assert.match(res.body, /new URL\('json', base\)/);
    assert.match(res.body, /validatorUrl: null/);
    const index = await app.inject({ url: '/docs/static/index.html' });
    assert.equal(index.statusCode, 302);
    assert.equal(index.headers.location, '/docs/');
  });

  it('serves the document as JSON and YAML', async () => {
    const json = await app.inject({ url: '/docs/json' });
    assert.deepEqual(json.json(), { openapi: '3.1.0' });
    const yaml = await app.inject({ url: '/docs/yaml' });
    assert.match(String(yaml.headers['content-type']), /^application\/x-yaml/);
    assert.equal(yaml.body, 'openapi: 3.1.0\n');
  });
});

describe('Swagger UI files: where they are read from', () => {
  let root: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'rota-swagger-ui-'));
    writeFileSync(join(root, 'package.json'), '{"name":"rota"}');
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('takes the build copy when it is there', () => {
    const built = join(root, SWAGGER_UI_BUILT);
    mkdirSync(built, { recursive: true });
    writeFileSync(join(built, 'swagger-ui-bundle.js'), '/* built */');
    assert.equal(swaggerUiFolder(root), built);
    rmSync(built, { recursive: true });
  });

  it('without the build copy nor the package, a file is a 404, not a crash', async () => {
    const folder = swaggerUiFolder(root);
    assert.equal(folder, join(root, SWAGGER_UI_BUILT));
    const app = appWith(folder);
    try {
      const res = await app.inject({ url: '/docs/static/swagger-ui.css' });
      assert.equal(res.statusCode, 404);
      assert.equal((await app.inject({ url: '/docs' })).statusCode, 200, 'the page itself still answers');
    } finally {
      await app.close();
    }
  });
});
