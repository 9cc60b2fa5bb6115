import { Ajv, type Options } from 'ajv';
import type { FastifyInstance, FastifySchema, FastifySchemaCompiler } from 'fastify';
import { addFormats } from '../lib/schema-check.ts';
import type { LazySchemas } from './lazy-schemas.ts';

const BASE: Options = { removeAdditional: false, allErrors: true, useDefaults: true, strict: false };

/**
 * Two validators: bodies are JSON and must have the right types ("5" is not a timeout); query strings and
 * path parameters are text by nature and are coerced.
 */
export function registerValidators(app: FastifyInstance, lazy: LazySchemas): void {
  const body = addFormats(new Ajv({ ...BASE, coerceTypes: false }));
  const text = addFormats(new Ajv({ ...BASE, coerceTypes: 'array' }));
  const compile: FastifySchemaCompiler<FastifySchema> = ({ schema, httpPart }) =>
    (httpPart === 'body' ? body : text).compile(schema);
  app.setValidatorCompiler(lazy.validatorCompiler(compile));
}
