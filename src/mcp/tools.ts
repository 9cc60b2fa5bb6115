import type { Json, RotaBackend } from './backend.ts';
import { ToolFailure } from './backend.ts';
import { renderFetch } from './render.ts';
import {
  AddProxyArgs,
  BansArgs,
  type BansArgsT,
  CheckProxiesArgs,
  FetchArgs,
  type FetchArgsT,
  ListProxiesArgs,
  type ListProxiesArgsT,
  NoArgs,
  RemoveProxyArgs,
  RotateArgs,
  type RotateArgsT,
} from './schemas.ts';
import { type CodeOf, checkArgs } from './validate.ts';

/**
 * The one set of MCP tools, over either backend (backend.ts). Each names its input schema (the REST
 * API's, schemas.ts), whether it changes the pool (`write`: refused to a caller without the key when
 * auth is on, server.ts), and what it does. What a tool returns is the REST API's data for the same call.
 */
export interface ToolDef {
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly input: object;
  /** True for a call that changes the pool or how Rota routes (refused without the key when auth is on). */
  readonly write: boolean | ((args: unknown) => boolean);
  run(backend: RotaBackend, args: unknown): Promise<Json>;
}

/** As POST request names a bad field (http/validation.ts codeFor). */
const fetchCode: CodeOf = (f) =>
  f.has('url')
    ? 'INVALID_URL'
    : f.has('method')
      ? 'INVALID_METHOD'
      : f.has('timeout')
        ? 'INVALID_TIMEOUT'
        : undefined;

const fetchTool: ToolDef = {
  name: 'fetch',
  title: 'Fetch a URL through the proxy pool',
  description:
    "Sends one HTTP request through a proxy of Rota's pool (rotation, failover to another proxy, bans " +
    "and Rota's SSRF rules apply; redirects are not followed) and returns the status, the main headers, " +
    'the proxy used and the body as text, cut at max_bytes (binary content is described, not shown). ' +
    'Use session to keep one proxy across calls, country to ask for a proxy of that country.',
  input: FetchArgs,
  write: false,
  async run(backend, args) {
    const a = checkArgs<FetchArgsT>(FetchArgs, args, fetchCode);
    const answer = await backend.fetch({
      url: a.url,
      method: a.method,
      headers: a.headers,
      body: a.body,
      timeout: a.timeout,
      session_id: a.session,
      country: a.country,
    });
    return renderFetch(answer, a.max_bytes);
  },
};

const readTools: ToolDef[] = [
  {
    name: 'pool_status',
    title: 'Pool status',
    description: 'How many proxies the pool has, how many are active and failing, the rotation strategy.',
    input: NoArgs,
    write: false,
    run: async (backend, args) => {
      checkArgs(NoArgs, args);
      return backend.poolStatus();
    },
  },
  {
    name: 'list_proxies',
    title: 'List proxies',
    description:
      'A page of the pool (creation order): each proxy with its status, health, country, tags and ' +
      'counters; credentials are never shown. Filter by status_filter.',
    input: ListProxiesArgs,
    write: false,
    run: async (backend, args) => backend.listProxies(checkArgs<ListProxiesArgsT>(ListProxiesArgs, args)),
  },
  {
    name: 'rotate',
    title: 'Which proxy is next',
    description:
      'The proxy a request would go through next (for a host: passing over proxies banned there; for a ' +
      'session or country). Advances the rotation like a real request; sends nothing.',
    input: RotateArgs,
    write: false,
    run: async (backend, args) => backend.rotate(checkArgs<RotateArgsT>(RotateArgs, args)),
  },
  {
    name: 'check_proxies',
    title: 'Health-check proxies',
    description: 'Health-checks the proxies named (all without proxy_ids) and returns each result.',
    input: CheckProxiesArgs,
    write: false,
    run: async (backend, args) => {
      const a = checkArgs<{ proxy_ids?: string[] }>(CheckProxiesArgs, args);
      return { results: await backend.checkProxies(a.proxy_ids) };
    },
  },
  {
    name: 'bans',
    title: 'Bans: list, or report one',
    description:
      'action list: the (proxy, host) pairs cooling down after a ban, oldest first (host filters, paged). ' +
      'action report: report that proxy_id is banned by host, so Rota keeps it off that host for ' +
      'cooldown_s (default: the ban policy); for a provider gateway give the session_id of the banned ' +
      'call: its provider session cools and the session moves to the next one. This changes how Rota ' +
      'routes to that host.',
    input: BansArgs,
    write: (args) => (args as { action?: unknown } | null)?.action === 'report',
    run: async (backend, args) => {
      const a = checkArgs<BansArgsT>(BansArgs, args);
      if (a.action === 'list')
        return backend.listBans({ host: a.host, page: a.page, page_size: a.page_size });
      if (a.proxy_id === undefined || a.host === undefined) {
        const missing = a.proxy_id === undefined ? 'proxy_id' : 'host';
        throw new ToolFailure('VALIDATION_ERROR', `action report needs ${missing}`, [
          { loc: ['arguments', missing], msg: 'Field required', type: 'required', input: null, ctx: {} },
        ]);
      }
      return backend.reportBan({
        proxy_id: a.proxy_id,
        host: a.host,
        cooldown_s: a.cooldown_s,
        session_id: a.session_id,
      });
    },
  },
];

/** As POST proxies names a bad URL (http/error-handler.ts). */
const proxyCode: CodeOf = (f) => (f.has('url') ? 'INVALID_PROXY_FORMAT' : undefined);

const writeTools: ToolDef[] = [
  {
    name: 'add_proxy',
    title: 'Add a proxy to the pool',
    description:
      "Changes the pool: adds one proxy (scheme://[user:pass@]host:port) to Rota's pool, used by every " +
      'client from then on. Needs the API key when Rota has one.',
    input: AddProxyArgs,
    write: true,
    run: async (backend, args) =>
      backend.addProxy(checkArgs<Record<string, unknown>>(AddProxyArgs, args, proxyCode)),
  },
  {
    name: 'remove_proxy',
    title: 'Remove a proxy from the pool',
    description:
      "Changes the pool: removes the proxy with this id from Rota's pool for every client. Needs the API " +
      'key when Rota has one.',
    input: RemoveProxyArgs,
    write: true,
    run: async (backend, args) => {
      const a = checkArgs<{ proxy_id: string }>(RemoveProxyArgs, args);
      await backend.removeProxy(a.proxy_id);
      return { removed: a.proxy_id };
    },
  },
];

export const TOOLS: readonly ToolDef[] = [fetchTool, ...readTools, ...writeTools];

export function toolNamed(name: string): ToolDef | undefined {
  return TOOLS.find((t) => t.name === name);
}
