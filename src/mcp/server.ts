import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  type ReadResourceResult,
} from '@modelcontextprotocol/sdk/types.js';
import { RotaError } from '../errors/rota-error.ts';
import { VERSION } from '../version.ts';
import { type Json, type RotaBackend, ToolFailure } from './backend.ts';
import { TOOLS, type ToolDef, toolNamed } from './tools.ts';

/**
 * Rota's MCP server over one backend (backend.ts), on whatever transport the caller connects it to
 * (stdio.ts, http.ts). The SDK's low-level Server: the tools' input schemas are JSON Schema made of the
 * REST API's TypeBox schemas and checked with Ajv (validate.ts), which the SDK's high-level McpServer
 * (zod schemas) would not take. Loaded only when an MCP client comes: nothing here is imported at start-up.
 *
 *   tools/call ─▶ write tool without the key? UNAUTHORIZED ─▶ arguments checked ─▶ backend ─▶ REST data
 *                                        any failure ─▶ isError result { error: { code, message, details } }
 */

export interface McpServerOptions {
  /** False: tools that change the pool are refused (auth on, and the caller has no valid key). */
  readonly mayWrite: boolean;
  /** Told of failures that are not Rota's own errors (they are answered INTERNAL_ERROR). */
  readonly onError?: (err: unknown) => void;
}

const RESOURCES = [
  {
    uri: 'rota://pool/status',
    name: 'pool-status',
    title: 'Pool status',
    description: 'The pool summary: proxies in total, active and failing, the rotation strategy, storage',
    read: (b: RotaBackend) => b.poolStatus(),
  },
  {
    uri: 'rota://config',
    name: 'config',
    title: 'Current configuration',
    description: 'The runtime configuration: rotation strategy, timeout, retries, rate limits, auth, CORS',
    read: (b: RotaBackend) => b.config(),
  },
] as const;

function failureOf(err: unknown, onError?: (err: unknown) => void): ToolFailure {
  if (err instanceof ToolFailure) return err;
  if (err instanceof RotaError) return new ToolFailure(err.code, err.message, err.detail ?? err.details);
  onError?.(err);
  return new ToolFailure('INTERNAL_ERROR', 'Internal server error');
}

function errorResult(f: ToolFailure): CallToolResult {
  const error = { code: f.code, message: f.message, details: f.details };
  return {
    isError: true,
    content: [{ type: 'text', text: `${f.code}: ${f.message}\n${JSON.stringify({ error })}` }],
    structuredContent: { error },
  };
}

function okResult(tool: ToolDef, data: Json): CallToolResult {
  const structured = data as Record<string, unknown>;
  if (tool.name !== 'fetch' || typeof structured.body !== 'string') {
    return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: structured };
  }
  // The body as a text block of its own: an agent reads it as it came, not escaped inside JSON.
  const { body, ...head } = structured;
  return {
    content: [
      { type: 'text', text: JSON.stringify(head) },
      { type: 'text', text: body },
    ],
    structuredContent: structured,
  };
}

async function callTool(
  backend: RotaBackend,
  o: McpServerOptions,
  name: string,
  args: unknown,
): Promise<CallToolResult> {
  const tool = toolNamed(name);
  if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
  const writes = typeof tool.write === 'function' ? tool.write(args) : tool.write;
  if (writes && !o.mayWrite) {
    return errorResult(
      new ToolFailure(
        'UNAUTHORIZED',
        `${tool.name} changes the pool: it needs a valid API key (X-API-Key or Authorization: Bearer)`,
      ),
    );
  }
  try {
    return okResult(tool, await tool.run(backend, args));
  } catch (err) {
    return errorResult(failureOf(err, o.onError));
  }
}

async function readResource(
  backend: RotaBackend,
  o: McpServerOptions,
  uri: string,
): Promise<ReadResourceResult> {
  const r = RESOURCES.find((x) => x.uri === uri);
  if (!r) throw new McpError(-32002, `Resource not found: ${uri}`, { uri });
  try {
    const data = await r.read(backend);
    return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(data) }] };
  } catch (err) {
    const f = failureOf(err, o.onError);
    throw new McpError(ErrorCode.InternalError, `${f.code}: ${f.message}`, {
      code: f.code,
      details: f.details,
    });
  }
}

export function createMcpServer(backend: RotaBackend, o: McpServerOptions): Server {
  const server = new Server(
    { name: 'rota', title: 'Rota rotating proxy gateway', version: VERSION },
    {
      capabilities: { tools: {}, resources: {} },
      instructions:
        "Rota is a rotating proxy gateway. Use fetch to get a web page through Rota's proxy pool (blocks, " +
        'rate limits and bans are handled by rotating and failing over); the other tools read and manage ' +
        'the pool. add_proxy, remove_proxy and bans action report change it.',
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: TOOLS.map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: t.input as { type: 'object' },
      annotations: {
        // fetch sends what it is given (a POST too) to the open web; the others read Rota or change the pool.
        readOnlyHint: t.write === false && t.name !== 'fetch',
        destructiveHint: t.name === 'remove_proxy',
        openWorldHint: t.name === 'fetch',
      },
    })),
  }));
  server.setRequestHandler(CallToolRequestSchema, (req) =>
    callTool(backend, o, req.params.name, req.params.arguments ?? {}),
  );
  server.setRequestHandler(ListResourcesRequestSchema, () => ({
    resources: RESOURCES.map(({ uri, name, title, description }) => ({
      uri,
      name,
      title,
      description,
      mimeType: 'application/json',
    })),
  }));
  server.setRequestHandler(ReadResourceRequestSchema, (req) => readResource(backend, o, req.params.uri));
  return server;
}
