import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { LazyChildLogger, lazyChildLogger } from './lazy-logger.ts';

function capture(level = 'info') {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  const logger = pino({ level }, sink);
  let children = 0;
  // pino's children inherit from their parent, so the spy must call the original with `this`.
  const child = logger.child;
  logger.child = function (this: typeof logger, ...a: Parameters<typeof child>) {
    children++;
    return child.apply(this, a);
  } as typeof logger.child;
  return { logger, lines, children: () => children };
}

describe('LazyChildLogger', () => {
  it('builds no child until a line is written, then writes with the bindings', () => {
    const c = capture();
    const lazy = new LazyChildLogger(c.logger as FastifyBaseLogger, { request_id: 'r-1' });
    assert.equal(c.children(), 0);
    lazy.debug('below the level');
    assert.equal(lazy.materialised, false, 'a line below the level builds nothing');
    lazy.info({ code: 'X' }, 'hello %s', 'world');
    lazy.error('second');
    assert.equal(c.children(), 1, 'one child, reused');
    assert.equal(c.lines.length, 2);
    assert.equal(c.lines[0]!.request_id, 'r-1');
    assert.equal(c.lines[0]!.code, 'X');
    assert.equal(c.lines[0]!.msg, 'hello world');
    assert.equal(c.lines[1]!.level, 50);
  });

  it('reports and changes the level like a child would', () => {
    const c = capture('warn');
    const lazy = new LazyChildLogger(c.logger as FastifyBaseLogger, { request_id: 'r-2' });
    assert.equal(lazy.level, 'warn');
    assert.equal(lazy.isLevelEnabled('info'), false);
    lazy.level = 'debug';
    assert.equal(c.logger.level, 'warn', 'the parent keeps its level');
    lazy.debug('now written');
    assert.equal(c.lines.length, 1);
    assert.equal(c.lines[0]!.request_id, 'r-2');
    const grandchild = lazy.child({ extra: 1 });
    grandchild.warn('w');
    assert.equal(c.lines[1]!.extra, 1);
    assert.equal(c.lines[1]!.request_id, 'r-2');
  });

  it('serves as Fastify’s request logger: lines carry the request id, silent requests cost no child', async () => {
    const c = capture();
    const app = Fastify({
      loggerInstance: c.logger as FastifyBaseLogger,
      disableRequestLogging: true,
      childLoggerFactory: lazyChildLogger,
    });
    app.get('/quiet', async () => ({ ok: true }));
    app.get('/talk', async (req) => {
      req.log.info('from the handler');
      return { ok: true };
    });
    await app.ready();
    const before = c.children();
    assert.equal((await app.inject({ url: '/quiet', headers: { 'x-request-id': 'q' } })).statusCode, 200);
    assert.equal(c.children(), before, 'no child for a request that logs nothing');
    const res = await app.inject({ url: '/talk' });
    assert.equal(res.statusCode, 200);
    const line = c.lines.find((l) => l.msg === 'from the handler');
    assert.ok(line, 'the line was written');
    assert.equal(typeof line.reqId, 'string');
    await app.close();
  });
});
