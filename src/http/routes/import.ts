/**
 * `POST /api/v1/proxies/import`: a whole proxy list in one call, as text/plain (one proxy per line) or
 * application/x-ndjson (one `POST proxies` body per line), stored in ONE transaction. Bodies are capped
 * at ROTA_MAX_IMPORT_BYTES and 100,000 lines (413, nothing stored). The route has its own body parsers,
 * scoped to this plugin: every other route still takes JSON only.
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { type Static, Type } from 'typebox';
import { PROTOCOLS, type Protocol } from '../../pool/types.ts';
import type { Services } from '../../services.ts';
import { importList } from '../../sources/bulk.ts';
import { parseNdjsonList } from '../../sources/formats.ts';
import { countLines, MAX_IMPORT_LINES, MAX_INVALID_LISTED, parseTextList } from '../../sources/lines.ts';
import { ok } from '../envelope.ts';
import { ApiError } from '../errors.ts';
import { routeLimit } from '../rate-limit.ts';
import { Envelope, errorResponses } from '../schemas/common.ts';

const TEXT = 'text/plain';
const NDJSON = 'application/x-ndjson';

const ImportQuery = Type.Object({
  protocol: Type.Enum([...PROTOCOLS], { default: 'http', description: 'Scheme of lines without one' }),
});

export const ImportSummarySchema = Type.Object({
  created: Type.Integer({ description: 'Proxies added' }),
  duplicates: Type.Integer({ description: 'Lines repeating an earlier line or a proxy already in the pool' }),
  invalid: Type.Array(
    Type.Object({
      line: Type.Integer({ minimum: 1, description: 'Counting every line from 1' }),
      reason: Type.String(),
    }),
    { maxItems: MAX_INVALID_LISTED, description: `The first ${MAX_INVALID_LISTED} invalid lines` },
  ),
  invalid_count: Type.Integer({ description: 'Every invalid line, listed or not' }),
});

const utf8 = new TextDecoder('utf-8', { fatal: true });

function unsupported(): ApiError {
  return new ApiError('UNSUPPORTED_MEDIA_TYPE', `Unsupported Content-Type; send ${TEXT} or ${NDJSON}`);
}

/** Both formats arrive as UTF-8 text, up to ROTA_MAX_IMPORT_BYTES (past it Fastify answers 413). */
function registerParsers(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers();
  for (const type of [TEXT, NDJSON]) {
    app.addContentTypeParser(type, { parseAs: 'buffer', bodyLimit }, (_req, body, done) => {
      try {
        done(null, utf8.decode(body as Buffer).replace(/^\uFEFF/, ''));
      } catch {
        const detail = [{ loc: ['body'], msg: 'Body is not valid UTF-8', type: 'value_error', input: null, ctx: {} }];
        done(new ApiError('VALIDATION_ERROR', 'Body is not valid UTF-8', { details: detail, detail }), undefined);
      }
    });
  }
  // Anything else is refused before its body is read, with this route's own advice.
  app.addContentTypeParser('*', (_req, _payload, done) => done(unsupported(), undefined));
}

export function importRoutes(services: Services): FastifyPluginAsync {
  return async (app) => {
    registerParsers(app, services.config.maxImportBytes);

    app.post<{ Querystring: Static<typeof ImportQuery>; Body: unknown }>(
      '/proxies/import',
      {
        config: {
          audit: 'proxy.import',
          rateLimit: routeLimit('addProxy', services.config, services.settings),
        },
        schema: {
          tags: ['proxies'],
          summary: 'Add many proxies in one transaction (text or NDJSON)',
          description:
            'text/plain: one proxy per line, `scheme://[user:pass@]host:port`, `host:port` or ' +
            '`host:port:user:pass` (`protocol` gives the scheme of bare lines); `#` comment lines and blank ' +
            'lines are skipped. application/x-ndjson: one `POST proxies` body per line. At most 100,000 ' +
            'lines and ROTA_MAX_IMPORT_BYTES (413, nothing stored). Every valid line is stored, in one ' +
            'transaction; one unit of the add-proxy rate limit per call.',
          querystring: ImportQuery,
          body: {
            content: {
              [TEXT]: { schema: Type.String() },
              [NDJSON]: { schema: Type.String() },
            },
          },
          response: { 200: Envelope(ImportSummarySchema), ...errorResponses(409, 413, 415, 422) },
        },
      },
      async (req) => {
        const text = req.body;
        const format = req.headers['content-type']?.toLowerCase().startsWith(NDJSON) ? 'ndjson' : 'text';
        if (typeof text !== 'string') throw unsupported();
        const lines = countLines(text);
        // The audit line gets this summary, never the list: a host:port:user:pass line is a password.
        req.body = { format, bytes: Buffer.byteLength(text), lines };
        if (lines > MAX_IMPORT_LINES) {
          throw new ApiError('PAYLOAD_TOO_LARGE', `More than ${MAX_IMPORT_LINES} lines; nothing was stored`, {
            details: { lines, max_lines: MAX_IMPORT_LINES },
          });
        }
        const list =
          format === 'ndjson' ? parseNdjsonList(text) : parseTextList(text, req.query.protocol as Protocol);
        const { summary } = await importList(services.pool, list);
        return ok(req, summary);
      },
    );
  };
}
