/**
 * Test support for the end-to-end control and observability tests (test/control*, test/observability*):
 * JSON calls to the API, each answer checked against the response schema that /openapi.json documents
 * for that route and status. Transport-agnostic, so the same checks run over inject() and a real socket.
 */
import assert from 'node:assert/strict';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';

export interface Reply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly text: string;
  /** Parsed body when the answer is JSON, else undefined. */
  readonly json: unknown;
}

export interface Outgoing {
  readonly method: string;
  readonly url: string;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

export type Transport = (req: Outgoing) => Promise<Reply>;

/** What `FastifyInstance.inject` needs; structural, so this file does not import Fastify. */
export interface Injectable {
  inject(opts: {
    method: string;
    url: string;
    headers?: Record<string, string>;
    payload?: string;
  }): Promise<{ statusCode: number; headers: Record<string, unknown>; body: string }>;
}

function toReply(status: number, headers: Record<string, string | undefined>, text: string): Reply {
  const isJson = /^application\/json/.test(headers['content-type'] ?? '');
  return { status, headers, text, json: isJson && text !== '' ? JSON.parse(text) : undefined };
}

function outgoingHeaders(req: Outgoing): Record<string, string> {
  const h: Record<string, string> = { ...req.headers };
  if (req.body !== undefined) h['content-type'] ??= 'application/json';
  return h;
}

export function injectTransport(app: Injectable): Transport {
  return async (req) => {
    const res = await app.inject({
      method: req.method,
      url: req.url,
      headers: outgoingHeaders(req),
      ...(req.body === undefined ? {} : { payload: JSON.stringify(req.body) }),
    });
    const headers: Record<string, string | undefined> = {};
    for (const [k, v] of Object.entries(res.headers)) headers[k] = v === undefined ? undefined : String(v);
    return toReply(res.statusCode, headers, res.body);
  };
}

export function fetchTransport(base: string): Transport {
  return async (req) => {
    const res = await fetch(`${base}${req.url}`, {
      method: req.method,
      headers: outgoingHeaders(req),
      ...(req.body === undefined ? {} : { body: JSON.stringify(req.body) }),
      signal: AbortSignal.timeout(30_000),
    });
    const headers: Record<string, string | undefined> = {};
    res.headers.forEach((v, k) => {
      headers[k] = v;
    });
    return toReply(res.status, headers, await res.text());
  };
}

const DOC_ID = 'urn:rota:openapi';
const enc = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

interface OpenApiDoc {
  paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
}

/** The response schemas of /openapi.json, compiled on demand ($refs resolve inside the document). */
export class ApiContract {
  readonly #ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  readonly #doc: OpenApiDoc;
  readonly #compiled = new Map<string, ValidateFunction>();

  constructor(doc: unknown) {
    this.#doc = doc as OpenApiDoc;
    this.#ajv.addSchema(doc as object, DOC_ID);
  }

  static async load(transport: Transport): Promise<ApiContract> {
    const r = await transport({ method: 'GET', url: '/openapi.json' });
    assert.equal(r.status, 200, 'GET /openapi.json');
    return new ApiContract(r.json);
  }

  /** Asserts that `body` is what the document promises for this route (path template) and status. */
  check(method: string, template: string, status: number, body: unknown): void {
    const m = method.toLowerCase();
    const op = this.#doc.paths[template]?.[m];
    assert.ok(op, `${method} ${template} is documented`);
    assert.ok(op.responses[String(status)], `${method} ${template} documents status ${status}`);
    this.checkAt(`#/paths/${enc(template)}/${m}/responses/${status}/content/application~1json/schema`, body);
  }

  /** Asserts `value` against the schema at a JSON pointer inside the document. */
  checkAt(pointer: string, value: unknown): void {
    let v = this.#compiled.get(pointer);
    if (!v) {
      v = this.#ajv.compile({ $ref: `${DOC_ID}${pointer}` });
      this.#compiled.set(pointer, v);
    }
    assert.ok(v(value), `${pointer}: ${this.#ajv.errorsText(v.errors)}\n${JSON.stringify(value)}`);
  }

  /** The `data` schema of a documented 200 answer, as a pointer. */
  dataOf(template: string, method = 'get'): string {
    return `#/paths/${enc(template)}/${method}/responses/200/content/application~1json/schema/properties/data`;
  }
}

export const API = '/api/v1';

export interface CallOptions {
  readonly params?: Readonly<Record<string, string>>;
  readonly query?: Readonly<Record<string, string | number>>;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Calls `/api/v1{template}` and checks every JSON answer against the document. */
export class Api {
  readonly transport: Transport;
  readonly contract: ApiContract;

  constructor(transport: Transport, contract: ApiContract) {
    this.transport = transport;
    this.contract = contract;
  }

  static async over(transport: Transport): Promise<Api> {
    return new Api(transport, await ApiContract.load(transport));
  }

  async call(method: string, template: string, o: CallOptions = {}): Promise<Reply> {
    let path = template;
    for (const [k, v] of Object.entries(o.params ?? {})) path = path.replace(`{${k}}`, encodeURIComponent(v));
    const qs = new URLSearchParams(
      Object.entries(o.query ?? {}).map(([k, v]): [string, string] => [k, String(v)]),
    ).toString();
    const r = await this.transport({
      method,
      url: `${API}${path}${qs ? `?${qs}` : ''}`,
      ...(o.body === undefined ? {} : { body: o.body }),
      ...(o.headers ? { headers: o.headers } : {}),
    });
    if (r.json !== undefined) this.contract.check(method, `${API}${template}`, r.status, r.json);
    return r;
  }

  /** The `data` of a 200 (or 201) answer; any other status fails the test. */
  async data<T>(method: string, template: string, o: CallOptions = {}): Promise<T> {
    const r = await this.call(method, template, o);
    assert.ok(
      r.status === 200 || r.status === 201,
      `${method} ${template}: ${r.status} ${r.text.slice(0, 500)}`,
    );
    return (r.json as { data: T }).data;
  }

  /**
   * GET /metrics/retry and /metrics/circuit-breaker (JSON form) are unversioned and not in the document;
   * their parts are the documented records of the /api/v1 retry and breaker routes, checked as such.
   */
  async rootJson(path: '/metrics/retry' | '/metrics/circuit-breaker', hours?: number): Promise<Reply> {
    const r = await this.transport({
      method: 'GET',
      url: hours === undefined ? path : `${path}?hours=${hours}`,
    });
    assert.equal(r.status, 200, `${path}: ${r.text.slice(0, 500)}`);
    const body = r.json as { status: string; error: unknown; meta: unknown; data: Record<string, unknown> };
    assert.equal(body.status, 'success');
    assert.equal(body.error, null);
    this.contract.checkAt('#/components/schemas/Meta', body.meta);
    const c = this.contract;
    if (path === '/metrics/retry') {
      c.checkAt(c.dataOf(`${API}/metrics/retries`), body.data.summary);
      c.checkAt(c.dataOf(`${API}/metrics/retries/timeseries`), body.data.timeseries);
      c.checkAt(c.dataOf(`${API}/metrics/retries/by-proxy`), body.data.by_proxy);
      assert.deepEqual(Object.keys(body.data).sort(), ['by_proxy', 'summary', 'timeseries']);
    } else {
      c.checkAt(c.dataOf(`${API}/circuit-breakers`), body.data.states);
      c.checkAt(c.dataOf(`${API}/circuit-breakers/metrics`), body.data.events);
      assert.ok(Number.isInteger(body.data.total_events) && Number.isInteger(body.data.hours));
    }
    return r;
  }
}
