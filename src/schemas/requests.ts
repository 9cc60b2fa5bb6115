/**
 * The request log's answers (`GET /api/v1/requests`, its live stream and HAR export) and per-host
 * analytics' (`GET /api/v1/hosts`). The dashboard (web/src/types.ts) takes its types from here with
 * `import type`: this module and what it imports stay free of Node's modules.
 */
import { type Static, Type } from 'typebox';
import { ATTEMPT_OUTCOMES, DOORS } from '../metrics/calls.ts';
import { CALL_OUTCOMES } from '../requestlog/entry.ts';
import { Nullable } from './common.ts';

const SCOPE = 'This instance only: each instance keeps its own request log and host figures.';

export const AttemptView = Type.Object({
  attempt: Type.Integer({ minimum: 1, description: '1-based; attempts after the first are retries' }),
  proxy_id: Type.String(),
  proxy_label: Nullable(
    Type.String({ description: 'host:port of the proxy (no credential); null once it is deleted' }),
  ),
  outcome: Type.Enum([...ATTEMPT_OUTCOMES]),
  kind: Nullable(Type.String({ description: 'What failed (an upstream error kind), or `banned`' })),
  status: Nullable(Type.Integer({ description: "The target's status, when it answered" })),
  latency_ms: Type.Number(),
});

export const RequestRecord = Type.Object({
  id: Type.Integer({ description: 'Increasing per instance' }),
  time: Type.String({ format: 'date-time', description: 'When the call began' }),
  door: Type.Enum([...DOORS], {
    description:
      '`api` (POST request), `http` (absolute-URI), `connect`, `socks5`, `inspect` (a request inside an inspected HTTPS connection)',
  }),
  method: Type.String({ description: '`CONNECT` for a tunnel (CONNECT or SOCKS5)' }),
  scheme: Nullable(Type.Enum(['http', 'https'], { description: 'null for a tunnel' })),
  host: Type.String({ description: "The target's host (never a credential)" }),
  port: Nullable(Type.Integer()),
  path: Nullable(Type.String({ description: 'Without its query; null for a tunnel' })),
  session_id: Nullable(Type.String()),
  rule: Nullable(Type.String({ description: 'The policy rule that applied, by name' })),
  attempts: Type.Array(AttemptView, { description: 'By attempt number: the order they began' }),
  proxy_id: Nullable(Type.String({ description: 'The proxy whose answer or tunnel the client got' })),
  status: Nullable(
    Type.Integer({
      description: "The status the client got (the target's, or Rota's error); null for a tunnel",
    }),
  ),
  outcome: Type.Enum([...CALL_OUTCOMES]),
  error_code: Nullable(Type.String()),
  ban_seen: Type.Boolean({ description: 'Some attempt was answered with a ban' }),
  latency_ms: Type.Number({
    description: "Until the answer's head (a tunnel: until it was connected), retries included",
  }),
  duration_ms: Nullable(
    Type.Number({ description: 'Until the body or tunnel was over; null while it goes on' }),
  ),
  bytes_up: Type.Integer({ description: 'Client to target (request body, or tunnel bytes)' }),
  bytes_down: Type.Integer({ description: 'Target to client (answer body, or tunnel bytes)' }),
  open: Type.Boolean({ description: 'The answer is still streaming, or the tunnel still open' }),
});
export type RequestRecordT = Static<typeof RequestRecord>;

export const RequestsQuery = Type.Object({
  host: Type.Optional(Type.String({ minLength: 1, maxLength: 253, description: 'Target host, exact' })),
  proxy_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: 'Some attempt went through it' }),
  ),
  outcome: Type.Optional(Type.Enum([...CALL_OUTCOMES])),
  door: Type.Optional(Type.Enum([...DOORS])),
  since: Type.Optional(
    Type.Integer({ minimum: 0, maximum: 1e14, description: 'Epoch ms: calls begun at or after it' }),
  ),
  page: Type.Integer({ minimum: 1, maximum: 100_000, default: 1 }),
  page_size: Type.Integer({ minimum: 1, maximum: 1000, default: 100 }),
  format: Type.Enum(['json', 'har'], {
    default: 'json',
    description: '`har`: the page as a HAR 1.2 log (no bodies, no header values), not in the envelope',
  }),
});
export type RequestsQueryT = Static<typeof RequestsQuery>;

export const StreamQuery = Type.Object({
  host: RequestsQuery.properties.host,
  proxy_id: RequestsQuery.properties.proxy_id,
  outcome: RequestsQuery.properties.outcome,
  door: RequestsQuery.properties.door,
});
export type StreamQueryT = Static<typeof StreamQuery>;

export const RequestsPage = Type.Object({
  items: Type.Array(RequestRecord, { description: 'Newest first' }),
  total: Type.Integer({ description: 'Records matching the filters' }),
  page: Type.Integer(),
  page_size: Type.Integer(),
  capacity: Type.Integer({ description: 'Records kept at most (ROTA_REQUEST_LOG_SIZE; 0: the log is off)' }),
  scope: Type.Literal('instance', { description: SCOPE }),
});
export type RequestsPageT = Static<typeof RequestsPage>;

const HarNameValue = Type.Object({ name: Type.String(), value: Type.String() });
const HarEntry = Type.Object({
  startedDateTime: Type.String({ format: 'date-time' }),
  time: Type.Number(),
  request: Type.Object({
    method: Type.String(),
    url: Type.String(),
    httpVersion: Type.String(),
    cookies: Type.Array(HarNameValue),
    headers: Type.Array(HarNameValue),
    queryString: Type.Array(HarNameValue),
    headersSize: Type.Integer(),
    bodySize: Type.Integer(),
  }),
  response: Type.Object({
    status: Type.Integer(),
    statusText: Type.String(),
    httpVersion: Type.String(),
    cookies: Type.Array(HarNameValue),
    headers: Type.Array(HarNameValue),
    content: Type.Object({ size: Type.Integer(), mimeType: Type.String() }),
    redirectURL: Type.String(),
    headersSize: Type.Integer(),
    bodySize: Type.Integer(),
  }),
  cache: Type.Object({}),
  timings: Type.Object({ send: Type.Number(), wait: Type.Number(), receive: Type.Number() }),
  _rota: RequestRecord,
});

export const HarDocument = Type.Object(
  {
    log: Type.Object({
      version: Type.Literal('1.2'),
      creator: Type.Object({ name: Type.String(), version: Type.String() }),
      entries: Type.Array(HarEntry),
    }),
  },
  { description: 'HAR 1.2 (format=har): the page of records, no bodies and no header values' },
);
export type HarDocumentT = Static<typeof HarDocument>;
