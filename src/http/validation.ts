import type { FastifyRequest, FastifySchemaValidationError } from 'fastify';
import { redactAt } from '../audit/redact.ts';
import type { RotaErrorCode } from '../errors/codes.ts';
import type { DetailItem } from '../errors/rota-error.ts';

// FastAPI-compatible names for where a value came from.
const LOC_ROOT: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

interface AjvParams {
  missingProperty?: string;
  additionalProperty?: string;
  type?: string;
  limit?: number;
  comparison?: string;
  allowedValues?: unknown[];
  allowedValue?: unknown;
  pattern?: string;
  format?: string;
  i?: number;
  j?: number;
}

const TYPE_NAMES: Record<string, string> = {
  string: 'string_type',
  integer: 'int_type',
  number: 'float_type',
  boolean: 'bool_type',
  object: 'dict_type',
  array: 'list_type',
  null: 'none_required',
};

function describe(e: FastifySchemaValidationError): {
  type: string;
  msg: string;
  ctx: Record<string, unknown>;
} {
  const p = e.params as AjvParams;
  switch (e.keyword) {
    case 'required':
      return { type: 'missing', msg: 'Field required', ctx: {} };
    case 'additionalProperties':
      return { type: 'extra_forbidden', msg: 'Extra inputs are not permitted', ctx: {} };
    case 'type':
      return {
        type: TYPE_NAMES[p.type ?? ''] ?? 'type_error',
        msg: `Input should be of type ${p.type}`,
        ctx: {},
      };
    case 'minimum':
      return { type: 'greater_than_equal', msg: `Input should be >= ${p.limit}`, ctx: { ge: p.limit } };
    case 'exclusiveMinimum':
      return { type: 'greater_than', msg: `Input should be > ${p.limit}`, ctx: { gt: p.limit } };
    case 'maximum':
      return { type: 'less_than_equal', msg: `Input should be <= ${p.limit}`, ctx: { le: p.limit } };
    case 'exclusiveMaximum':
      return { type: 'less_than', msg: `Input should be < ${p.limit}`, ctx: { lt: p.limit } };
    case 'minLength':
      return {
        type: 'string_too_short',
        msg: `String should have at least ${p.limit} characters`,
        ctx: { min_length: p.limit },
      };
    case 'maxLength':
      return {
        type: 'string_too_long',
        msg: `String should have at most ${p.limit} characters`,
        ctx: { max_length: p.limit },
      };
    case 'minItems':
      return {
        type: 'too_short',
        msg: `List should have at least ${p.limit} items`,
        ctx: { min_length: p.limit },
      };
    case 'maxItems':
      return {
        type: 'too_long',
        msg: `List should have at most ${p.limit} items`,
        ctx: { max_length: p.limit },
      };
    case 'maxProperties':
      return {
        type: 'too_long',
        msg: `Object should have at most ${p.limit} fields`,
        ctx: { max_length: p.limit },
      };
    case 'enum':
      return {
        type: 'enum',
        msg: `Input should be one of ${JSON.stringify(p.allowedValues)}`,
        ctx: { expected: p.allowedValues },
      };
    case 'const':
      return {
        type: 'literal_error',
        msg: `Input should be ${JSON.stringify(p.allowedValue)}`,
        ctx: { expected: p.allowedValue },
      };
    case 'pattern':
      return {
        type: 'string_pattern_mismatch',
        msg: 'String does not match the expected pattern',
        ctx: { pattern: p.pattern },
      };
    case 'uniqueItems':
      return {
        type: 'value_error',
        msg: `List items must be unique (items ${p.j} and ${p.i} are the same)`,
        ctx: { duplicate_of: p.j, index: p.i },
      };
    case 'format':
      return { type: 'value_error', msg: `Input should be a valid ${p.format}`, ctx: { format: p.format } };
    default:
      return { type: 'value_error', msg: e.message ?? 'Invalid value', ctx: {} };
  }
}

function pointerToPath(pointer: string): (string | number)[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

function valueAt(root: unknown, path: (string | number)[]): unknown {
  let cur: unknown = root;
  for (const k of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string | number, unknown>)[k];
  }
  return cur;
}

function safeInput(path: (string | number)[], value: unknown): unknown {
  return redactAt(path, value ?? null);
}

/** Turns ajv's errors into FastAPI-style `detail` items; inputs are redacted. */
export function toDetail(
  errors: readonly FastifySchemaValidationError[],
  context: string,
  req: FastifyRequest,
): DetailItem[] {
  const data =
    context === 'body'
      ? req.body
      : context === 'querystring'
        ? req.query
        : context === 'params'
          ? req.params
          : req.headers;
  const seen = new Set<string>();
  const out: DetailItem[] = [];
  for (const e of errors) {
    // anyOf/oneOf/propertyNames repeat what their branches already said.
    if (['anyOf', 'oneOf', 'if', 'propertyNames'].includes(e.keyword)) continue;
    const p = e.params as AjvParams;
    const path = pointerToPath(e.instancePath);
    // A property name that fails `propertyNames` (a header name that is not a token): located by the name.
    const name = (e as { propertyName?: unknown }).propertyName;
    const extra =
      p.missingProperty ?? p.additionalProperty ?? (typeof name === 'string' ? name.slice(0, 64) : undefined);
    const at = extra === undefined ? path : [...path, extra];
    const described = describe(e);
    const { type, ctx } = described;
    const msg = typeof name === 'string' ? `Property name: ${described.msg}` : described.msg;
    const key = `${at.join('.')}|${type}`;
    if (seen.has(key)) continue;
    seen.add(key);
    // An unknown field's value is not echoed: a client may have put a secret under a name we do not know.
    // Nor is a value under a name the client chose (a header for the target), nor that name's value.
    const underChosenName = /\/(?:additionalProperties|patternProperties)\//.test(e.schemaPath);
    const input =
      e.keyword === 'required'
        ? valueAt(data, path)
        : e.keyword === 'additionalProperties' || typeof name === 'string' || underChosenName
          ? null
          : valueAt(data, at);
    out.push({ loc: [LOC_ROOT[context] ?? context, ...at], msg, type, input: safeInput(at, input), ctx });
  }
  // A nullable field that fails gets one error per branch ("not null" among them); the other says more.
  const located = new Set(out.filter((d) => d.type !== 'none_required').map((d) => d.loc.join('.')));
  return out.filter((d) => d.type !== 'none_required' || !located.has(d.loc.join('.')));
}

/** The most specific code for a set of failing fields (docs/decisions.md, "Errors"). */
export function codeFor(detail: readonly DetailItem[], urlIsTarget: boolean): RotaErrorCode {
  const fields = new Set(detail.map((d) => (d.loc[0] === 'body' ? d.loc[1] : undefined)));
  if (urlIsTarget && fields.has('url')) return 'INVALID_URL';
  if (fields.has('method')) return 'INVALID_METHOD';
  if (fields.has('timeout')) return 'INVALID_TIMEOUT';
  return 'VALIDATION_ERROR';
}
