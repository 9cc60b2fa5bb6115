import type { FastifyRequest } from 'fastify';
import { type DetailItem, RotaError } from '../errors/rota-error.ts';
import { toDetail } from './validation.ts';

/** What the PUT routes of runtime settings (config, retry policy, ban policy) share to report problems. */

export function invalidConfig(items: DetailItem[]): RotaError {
  return new RotaError('INVALID_CONFIGURATION', 'Invalid configuration values', {
    details: items,
    detail: items,
  });
}

export function item(loc: (string | number)[], msg: string, input: unknown): DetailItem {
  return { loc: ['body', ...loc], msg, type: 'value_error', input, ctx: {} };
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * The route keeps going after a schema failure (`attachValidation`) so that the schema's findings and
 * the checks the schema cannot express are reported together: every problem in one answer.
 */
export function schemaProblems(req: FastifyRequest): DetailItem[] {
  const err = req.validationError;
  if (!err) return [];
  return toDetail(err.validation, err.validationContext, req);
}
