import type { FastifyInstance } from 'fastify';
import sjson from 'secure-json-parse';
import { RotaError } from '../errors/rota-error.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true });

function invalid(msg: string): RotaError {
  const detail = [{ loc: ['body'], msg, type: 'json_invalid', input: null, ctx: { error: msg } }];
  return new RotaError('VALIDATION_ERROR', 'Request body is not valid JSON', { details: detail, detail });
}

/**
 * JSON bodies must be UTF-8 (RFC 8259): a lenient decoder would turn bad bytes into U+FFFD and store
 * them. `__proto__` and `constructor.prototype` keys are refused so that no body can poison a prototype.
 */
export function registerJsonParser(app: FastifyInstance, bodyLimit: number): void {
  // Only JSON is accepted: anything else is a 415, never a string handed to a schema.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, (_req, body, done) => {
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      done(invalid('Body is not valid UTF-8'), undefined);
      return;
    }
    if (text.trim() === '') {
      done(invalid('Body is empty'), undefined);
      return;
    }
    try {
      done(null, sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }));
    } catch (e) {
      // V8's message quotes ~20 characters of the body around the error, which may be a secret: keep only
      // where it failed.
      const pos = e instanceof SyntaxError ? /position (\d+)/.exec(e.message)?.[1] : undefined;
      const msg = !(e instanceof SyntaxError)
        ? 'Forbidden key in JSON body'
        : pos === undefined
          ? 'Invalid JSON'
          : `Invalid JSON at position ${pos}`;
      done(invalid(msg), undefined);
    }
  });
}
