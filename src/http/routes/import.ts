/**
 * `POST /api/v1/proxies/import`: a whole proxy list in one call, as text/plain (one proxy per line),
 * application/x-ndjson (one `POST proxies` body per line) or application/json (an array of them), stored
 * in ONE transaction. Bodies are capped at ROTA_MAX_IMPORT_BYTES and 100,000 lines or items (413, nothing
 * stored). The route has its own body parsers, scoped to this plugin: other routes keep their limit.
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { type Static, Type } from 'typebox';
import { RotaError } from '../../errors/rota-error.ts';
import { PROTOCOLS, type Protocol } from '../../pool/types.ts';
import { Envelope, errorResponses } from '../../schemas/common.ts';
import { type ImportSummary, ImportSummarySchema } from '../../schemas/import.ts';
import type { Services } from '../../services.ts';
import { importList } from '../../sources/bulk.ts';
import { parseBodyArray, parseNdjsonList } from '../../sources/formats.ts';
import { countLines, MAX_IMPORT_LINES, parseTextList } from '../../sources/lines.ts';
import { ok } from '../envelope.ts';
import { registerJsonParser } from '../json-parser.ts';
import { routeLimit } from '../rate-limit.ts';

const TEXT = 'text/plain';
const NDJSON = 'application/x-ndjson';
const JSON_TYPE = 'application/json';

const ImportQuery = Type.Object({
  protocol: Type.Enum([...PROTOCOLS], { default: 'http', description: 'Scheme of lines without one' }),
});

const utf8 = new TextDecoder('utf-8', { fatal: true });

function unsupported(): RotaError {
  return new RotaError(
    'UNSUPPORTED_MEDIA_TYPE',
    `Unsupported Content-Type; send ${TEXT}, ${NDJSON} or ${JSON_TYPE}`,
  );
}

/** Every format arrives as UTF-8, up to ROTA_MAX_IMPORT_BYTES (past it Fastify answers 413). */
function registerParsers(app: FastifyInstance, bodyLimit: number): void {
  // The app's JSON parser (UTF-8, no prototype keys) with this route's limit; it clears the others.
  registerJsonParser(app, bodyLimit);
  for (const type of [TEXT, NDJSON]) {
    app.addContentTypeParser(type, { parseAs: 'buffer', bodyLimit }, (_req, body, done) => {
      try {
        done(null, utf8.decode(body as Buffer).replace(/^\uFEFF/, ''));
      } catch {
        const detail = [
          { loc: ['body'], msg: 'Body is not valid UTF-8', type: 'value_error', input: null, ctx: {} },
        ];
        done(
          new RotaError('VALIDATION_ERROR', 'Body is not valid UTF-8', { details: detail, detail }),
          undefined,
        );
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
          summary: 'Add many proxies in one transaction (text, NDJSON or a JSON array)',
          description:
            'text/plain: one proxy per line, `scheme://[user:pass@]host:port`, `host:port` or ' +
            '`host:port:user:pass` (`protocol` gives the scheme of bare lines); `#` comment lines and blank ' +
            'lines are skipped. application/x-ndjson: one `POST proxies` body per line; application/json: an ' +
            'array of them (items numbered as lines). At most 100,000 lines and ROTA_MAX_IMPORT_BYTES (413, ' +
            'nothing stored). Every valid line is stored, in one transaction; one unit of the add-proxy rate ' +
            'limit per call.',
          querystring: ImportQuery,
          body: {
            content: {
              [TEXT]: { schema: Type.String() },
              [NDJSON]: { schema: Type.String() },
              [JSON_TYPE]: {
                schema: Type.Array(Type.Unknown(), {
                  description: 'POST proxies bodies; each invalid item is reported, not the whole array',
                }),
              },
            },
          },
          response: { 200: Envelope(ImportSummarySchema), ...errorResponses(409, 413, 415, 422) },
        },
      },
      async (req) => {
        const { body } = req;
        const type = req.headers['content-type']?.toLowerCase() ?? '';
        const format = Array.isArray(body) ? 'json' : type.startsWith(NDJSON) ? 'ndjson' : 'text';
        if (typeof body !== 'string' && !Array.isArray(body)) throw unsupported();
        const lines = Array.isArray(body) ? body.length : countLines(body);
        // The audit line gets this summary, never the list: a host:port:user:pass line is a password.
        const bytes =
          typeof body === 'string' ? Buffer.byteLength(body) : Number(req.headers['content-length']);
        req.body = { format, bytes, lines };
        if (lines > MAX_IMPORT_LINES) {
          throw new RotaError(
            'PAYLOAD_TOO_LARGE',
            `More than ${MAX_IMPORT_LINES} lines; nothing was stored`,
            {
              details: { lines, max_lines: MAX_IMPORT_LINES },
            },
          );
        }
        const list = Array.isArray(body)
          ? parseBodyArray(body)
          : format === 'ndjson'
            ? parseNdjsonList(body)
            : parseTextList(body, req.query.protocol as Protocol);
        const { summary } = await importList(services.pool, list);
        return ok<ImportSummary>(req, summary);
      },
    );
  };
}
