import { Ajv2020 } from 'ajv/dist/2020.js';
import * as formats from 'ajv-formats';

/** The parts of an OpenAPI document the tests read. */
export interface Parameter {
  in: string;
  name: string;
  required?: boolean;
  schema?: unknown;
}
export interface Media {
  schema?: unknown;
}
export interface Operation {
  operationId?: string;
  summary?: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, Media> };
  responses: Record<string, { description?: string; content?: Record<string, Media> }>;
  security?: Record<string, string[]>[];
}
export interface Document {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas?: Record<string, unknown>; securitySchemes?: Record<string, unknown> };
  security?: Record<string, string[]>[];
}

export const API = '/api/v1';
/** Unversioned (outside /api/v1) yet documented: their JSON is part of the contract. `/metrics` is not. */
export const UNVERSIONED = ['/metrics/retry', '/metrics/circuit-breaker'];

export function isDocumented(url: string): boolean {
  return url.startsWith(`${API}/`) || UNVERSIONED.includes(url);
}

type FormatsPlugin = (ajv: Ajv2020) => Ajv2020;
const addFormats = ((formats as unknown as { default: { default?: FormatsPlugin } }).default.default ??
  (formats as unknown as { default: FormatsPlugin }).default) as FormatsPlugin;

/** JSON-pointer escaping of one path segment. */
export const enc = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');
export const SOME_UUID = '3f2d1c4b-5a69-4788-9a0b-1c2d3e4f5a6b';

export function resolvePointer(doc: unknown, ref: string): unknown {
  let node: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !(key in node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

export function collectRefs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const n of node) collectRefs(n, out);
  else if (node !== null && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else collectRefs(v, out);
    }
  }
  return out;
}

export function operations(doc: Document): { key: string; path: string; method: string; op: Operation }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ key: `${method} ${path}`, path, method, op })),
  );
}

/** Every schema in the document, with a JSON pointer to it for messages and for Ajv. */
export function schemaPointers(doc: Document): string[] {
  const out = Object.keys(doc.components.schemas ?? {}).map((n) => `#/components/schemas/${enc(n)}`);
  for (const { path, method, op } of operations(doc)) {
    const base = `#/paths/${enc(path)}/${method}`;
    (op.parameters ?? []).forEach((_, i) => {
      out.push(`${base}/parameters/${i}/schema`);
    });
    for (const type of Object.keys(op.requestBody?.content ?? {})) {
      out.push(`${base}/requestBody/content/${enc(type)}/schema`);
    }
    for (const [status, res] of Object.entries(op.responses)) {
      for (const type of Object.keys(res.content ?? {})) {
        out.push(`${base}/responses/${status}/content/${enc(type)}/schema`);
      }
    }
  }
  return out;
}

/** Validates a response body against the document, formats included (a `date-time` must be one). */
export function responseChecker(doc: Document): (pointer: string, body: unknown) => string | null {
  const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
  ajv.addSchema(doc as object, 'urn:rota:openapi');
  return (pointer, body) => {
    const validate =
      ajv.getSchema(`urn:rota:openapi${pointer}`) ?? ajv.compile({ $ref: `urn:rota:openapi${pointer}` });
    return validate(body) ? null : ajv.errorsText(validate.errors);
  };
}
