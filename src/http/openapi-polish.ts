/*
 * The OpenAPI document as Rota publishes it: @fastify/swagger generates it from the route schemas,
 * and this turns it into what the contract and the docs pages want (operation ids, response
 * descriptions, links between operations, security schemes, optional bodies). Served by docs.ts.
 */

import type {} from 'fastify';
import { STATUS_CODES } from '../runtime/node-http.ts';
import { HANDLER_PATTERN } from '../schemas/common.ts';

/** Route schema key for a body that may be left out; @fastify/swagger copies `x-` keys onto the operation. */
export const BODY_OPTIONAL = 'x-body-optional';

declare module 'fastify' {
  interface FastifySchema {
    /** The route accepts a request without a body (e.g. health-check means "every proxy" then). */
    [BODY_OPTIONAL]?: boolean;
  }
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace']);

interface MediaType {
  schema?: unknown;
}
interface ResponseObject {
  description?: string;
  content?: Record<string, MediaType>;
}
interface ParameterObject {
  in?: string;
  required?: boolean;
  schema?: { default?: unknown };
}
interface LinkObject {
  operationId: string;
  parameters: Record<string, string>;
  description: string;
}
interface ResponseWithLinks extends ResponseObject {
  links?: Record<string, LinkObject>;
}
interface OperationObject {
  [BODY_OPTIONAL]?: boolean;
  requestBody?: { required?: boolean; content?: Record<string, MediaType> };
  operationId?: string;
  parameters?: ParameterObject[];
  responses?: Record<string, ResponseWithLinks>;
  security?: unknown[];
}
interface DocumentShape {
  paths?: Record<string, Record<string, unknown> | undefined>;
  security?: unknown[];
  components?: { securitySchemes?: unknown };
}

/** What the document depends on in the configuration. */
export interface DocsOptions {
  /** ROTA_REQUIRE_AUTH: only then does the document require a key (and list 401 answers). */
  readonly requireAuth: boolean;
}

const SECURITY_SCHEMES = {
  ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
  Bearer: { type: 'http', scheme: 'bearer' },
};

/**
 * OpenAPI links: where the id an answer carries can be used next. Clients (and schemathesis's stateful
 * phase) follow them from the proxy just added to its record, its breaker and its removal.
 */
const PROXY_ID = '$response.body#/data/id';
const LINKS: Record<string, Record<string, Record<string, LinkObject>>> = {
  postProxies: {
    '201': {
      GetProxy: {
        operationId: 'getProxiesByProxyId',
        parameters: { proxy_id: PROXY_ID },
        description: 'The proxy just added',
      },
      DeleteProxy: {
        operationId: 'deleteProxiesByProxyId',
        parameters: { proxy_id: PROXY_ID },
        description: 'Remove the proxy just added',
      },
      GetCircuitBreaker: {
        operationId: 'getCircuitBreakersByProxyId',
        parameters: { proxy_id: PROXY_ID },
        description: 'The circuit breaker of the proxy just added',
      },
      ResetCircuitBreaker: {
        operationId: 'postCircuitBreakersByProxyIdReset',
        parameters: { proxy_id: PROXY_ID },
        description: 'Close the circuit breaker of the proxy just added',
      },
    },
  },
};

/** `get` + `/api/v1/proxies/{proxy_id}/check` → `getProxiesByProxyIdCheck`: stable, readable, unique. */
export function operationIdFor(method: string, path: string): string {
  const words = path
    .replace(/^\/api\/v1(?=\/|$)/, '')
    .split('/')
    .filter((s) => s !== '')
    .flatMap((seg) => {
      const param = /^\{(.+)\}$/.exec(seg);
      return param ? ['by', ...param[1]!.split(/[^A-Za-z0-9]+/)] : seg.split(/[^A-Za-z0-9]+/);
    })
    .filter((w) => w !== '');
  return method.toLowerCase() + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

/**
 * TypeBox writes string enums and literals without `type`; ReDoc then labels them "any". Every node
 * of the document is walked because schemas are inlined throughout it.
 */
function typeStringEnums(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) typeStringEnums(item);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const obj = node as Record<string, unknown>;
  if (obj.type === undefined) {
    const values = Array.isArray(obj.enum) ? obj.enum : 'const' in obj ? [obj.const] : null;
    if (values && values.length > 0 && values.every((v) => typeof v === 'string')) obj.type = 'string';
  }
  for (const value of Object.values(obj)) typeStringEnums(value);
}

function polishResponses(responses: Record<string, ResponseObject>): void {
  for (const [status, res] of Object.entries(responses)) {
    const code = Number(status);
    const text = STATUS_CODES[code];
    if (res.description === 'Default Response' && text) res.description = text;
    else if (code >= 400 && text && res.description && !res.description.startsWith(text)) {
      res.description = `${text}: ${res.description}`;
    }
    // Errors are always the JSON envelope, even on routes whose success body is NDJSON.
    if (code >= 400 && res.content && !res.content['application/json']) {
      const first = Object.values(res.content)[0];
      res.content = { 'application/json': first ?? {} };
    }
  }
}

/**
 * A pattern a handler checks (HANDLER_PATTERN, see schemas/common.ts) is stated as `pattern` in the
 * document. The document is a copy: the route schemas themselves, which the validator compiles, keep
 * theirs as it was.
 */
function statePatterns(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) statePatterns(item);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const obj = node as Record<string, unknown>;
  const pattern = obj[HANDLER_PATTERN];
  if (typeof pattern === 'string') {
    delete obj[HANDLER_PATTERN];
    if (typeof obj.pattern === 'string') obj.allOf = [...((obj.allOf as unknown[]) ?? []), { pattern }];
    else obj.pattern = pattern;
  }
  for (const value of Object.values(obj)) statePatterns(value);
}

/**
 * The validator fills in a body property's `default` when it is missing (`useDefaults`), so a client may
 * leave such a property out although the route's type has it: the document does not list it as required.
 */
function defaultsNotRequired(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) defaultsNotRequired(item);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const obj = node as { required?: unknown; properties?: Record<string, { default?: unknown } | undefined> };
  const { properties } = obj;
  if (Array.isArray(obj.required) && properties) {
    obj.required = obj.required.filter((name) => properties[String(name)]?.default === undefined);
    if ((obj.required as unknown[]).length === 0) delete obj.required;
  }
  for (const value of Object.values(obj)) defaultsNotRequired(value);
}

const SAFE_METHODS = new Set(['get', 'head', 'options']);

/** The error envelope's content, as the first operation documenting a 500 has it. */
function errorContent(paths: DocumentShape['paths']): ResponseObject['content'] {
  for (const item of Object.values(paths ?? {})) {
    for (const op of Object.values(item ?? {})) {
      const content = (op as OperationObject | undefined)?.responses?.['500']?.content;
      if (content) return content;
    }
  }
  return undefined;
}

/**
 * The origin guard (origin-guard.ts) answers before any route: 421 to a Host not allowed, 403 to a
 * write from another web origin. Both are the error envelope.
 */
function addGuardResponses(
  method: string,
  responses: Record<string, ResponseObject>,
  envelope: ResponseObject['content'],
): void {
  if (!envelope) return;
  responses['421'] ??= {
    description: 'MISDIRECTED_REQUEST: the Host header names a host not in ROTA_ALLOWED_HOSTS',
    content: structuredClone(envelope),
  };
  if (SAFE_METHODS.has(method)) return;
  responses['403'] ??= {
    description:
      'FORBIDDEN_ORIGIN: sent by a page of another web origin, not in ROTA_CORS_ORIGINS; nothing was changed',
    content: structuredClone(envelope),
  };
}

function polishOperation(
  method: string,
  path: string,
  op: OperationObject,
  opts: DocsOptions,
  envelope: ResponseObject['content'],
): void {
  op.operationId ??= operationIdFor(method, path);
  // @fastify/swagger marks every body required; a route that treats a missing body as {} says so.
  if (op[BODY_OPTIONAL] === true && op.requestBody) op.requestBody.required = false;
  delete op[BODY_OPTIONAL];
  for (const media of Object.values(op.requestBody?.content ?? {})) defaultsNotRequired(media.schema);
  for (const p of op.parameters ?? []) {
    // Fastify fills defaulted query values in, so a client may leave them out.
    if (p.in === 'query' && p.schema?.default !== undefined) p.required = false;
  }
  if (op.responses) {
    addGuardResponses(method, op.responses, envelope);
    polishResponses(op.responses);
    if (!opts.requireAuth) {
      // Without ROTA_REQUIRE_AUTH no operation needs a key, and none answers 401.
      delete op.responses['401'];
      delete op.security;
    } else if (!op.responses['401'] && op.security === undefined) {
      // A route that cannot answer 401 needs no credentials (health and readiness probes).
      op.security = [];
    }
  }
}

function addLinks(operations: OperationObject[]): void {
  const ids = new Set(operations.map((op) => op.operationId));
  for (const op of operations) {
    for (const [status, links] of Object.entries(LINKS[op.operationId ?? ''] ?? {})) {
      const res = op.responses?.[status];
      const usable = Object.entries(links).filter(([, link]) => ids.has(link.operationId));
      if (res && usable.length > 0) res.links = Object.fromEntries(usable);
    }
  }
}

/**
 * Post-processes (a copy of) the generated document: operation ids, public operations, security only with
 * ROTA_REQUIRE_AUTH, clearer responses, handler-checked patterns, links.
 */
export function polishDocument<T extends object>(generated: T, opts: DocsOptions): T {
  const doc = structuredClone(generated);
  const shape = doc as DocumentShape;
  if (opts.requireAuth) {
    shape.security = [{ ApiKey: [] }, { Bearer: [] }];
    shape.components = { ...shape.components, securitySchemes: SECURITY_SCHEMES };
  } else {
    delete shape.security;
    if (shape.components) delete shape.components.securitySchemes;
  }
  const operations: OperationObject[] = [];
  const envelope = errorContent(shape.paths);
  for (const [path, item] of Object.entries(shape.paths ?? {})) {
    for (const [method, op] of Object.entries(item ?? {})) {
      if (HTTP_METHODS.has(method) && op && typeof op === 'object') {
        polishOperation(method, path, op as OperationObject, opts, envelope);
        operations.push(op as OperationObject);
      }
    }
  }
  addLinks(operations);
  statePatterns(doc);
  typeStringEnums(doc);
  return doc;
}
