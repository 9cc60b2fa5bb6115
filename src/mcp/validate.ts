import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { RotaErrorCode } from '../errors/codes.ts';
import type { DetailItem } from '../errors/rota-error.ts';
import { addFormats } from '../lib/schema-check.ts';
import { ToolFailure } from './backend.ts';

/**
 * A tool's arguments checked against its JSON Schema (built from the REST API's TypeBox schemas,
 * schemas.ts) with Ajv under the options the API uses for JSON bodies (http/validator.ts): every
 * problem reported, defaults filled in, no coercion ("5" is not a page). A failure is Rota's
 * VALIDATION_ERROR (or the field's own code, as the REST route gives it) with one detail item per problem,
 * located under `arguments`; values are never echoed (a header value may be a secret).
 */

let ajv: Ajv | undefined;
const compiled = new WeakMap<object, ValidateFunction>();

function validatorOf(schema: object): ValidateFunction {
  let v = compiled.get(schema);
  if (!v) {
    ajv ??= addFormats(
      new Ajv({
        removeAdditional: false,
        allErrors: true,
        useDefaults: true,
        strict: false,
        coerceTypes: false,
      }),
    );
    v = ajv.compile(schema);
    compiled.set(schema, v);
  }
  return v;
}

function pathOf(e: ErrorObject): (string | number)[] {
  const path: (string | number)[] = e.instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
  const p = e.params as { missingProperty?: string; additionalProperty?: string };
  const name = (e as { propertyName?: unknown }).propertyName;
  const extra =
    p.missingProperty ?? p.additionalProperty ?? (typeof name === 'string' ? name.slice(0, 64) : undefined);
  return extra === undefined ? path : [...path, extra];
}

function detailOf(errors: readonly ErrorObject[]): DetailItem[] {
  const seen = new Set<string>();
  const out: DetailItem[] = [];
  for (const e of errors) {
    // anyOf/if/propertyNames repeat what their branches already said.
    if (['anyOf', 'oneOf', 'if', 'propertyNames'].includes(e.keyword)) continue;
    const loc = ['arguments', ...pathOf(e)];
    const key = `${loc.join('.')}|${e.keyword}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ loc, msg: e.message ?? 'Invalid value', type: e.keyword, input: null, ctx: {} });
  }
  return out;
}

/** The code of a failure, by the fields that failed (a tool names its own; VALIDATION_ERROR otherwise). */
export type CodeOf = (fields: ReadonlySet<string>) => RotaErrorCode | undefined;

/** `args` with the schema's defaults filled in, or a ToolFailure naming every problem. */
export function checkArgs<T>(schema: object, args: unknown, codeOf?: CodeOf): T {
  const value = structuredClone(args ?? {});
  const validate = validatorOf(schema);
  if (validate(value)) return value as T;
  const detail = detailOf(validate.errors ?? []);
  const fields = new Set(detail.map((d) => String(d.loc[1])));
  const code = codeOf?.(fields) ?? 'VALIDATION_ERROR';
  throw new ToolFailure(code, 'Invalid arguments', detail);
}
