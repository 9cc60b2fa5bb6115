import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Services } from '../services.ts';
import { LocalBackend, type LocalCaller } from './local.ts';
import { createMcpServer } from './server.ts';

/**
 * One POST to /mcp (MCP's Streamable HTTP transport), answered in-process: a server and a transport of
 * the SDK per request, stateless (no Mcp-Session-Id: any instance or worker can answer any request) and
 * with JSON answers rather than an SSE stream (no tool sends anything before its result). The HTTP door
 * (http/routes/mcp.ts) has already done what every API request gets (origin guard, key, rate limit, body
 * limit, JSON parsing) and hands over the parsed body; the answer goes back through Fastify's reply.
 */

/** The transport wants a Request with an absolute URL; it reads nothing of it. */
const URL_OF_MCP = 'http://rota.invalid/mcp';

export interface McpHttpCall {
  /** The headers the transport reads (Accept, Content-Type, Mcp-Protocol-Version). */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: unknown;
  /** False when Rota has an API key and the request did not carry it: write tools are refused. */
  readonly mayWrite: boolean;
  readonly caller: LocalCaller;
  readonly onError: (err: unknown) => void;
}

export interface McpHttpAnswer {
  readonly status: number;
  readonly headers: readonly [string, string][];
  readonly body: string;
}

export async function answerMcp(services: Services, call: McpHttpCall): Promise<McpHttpAnswer> {
  const backend = new LocalBackend(services, call.caller);
  const server = createMcpServer(backend, { mayWrite: call.mayWrite, onError: call.onError });
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  try {
    const res = await transport.handleRequest(
      new Request(URL_OF_MCP, { method: 'POST', headers: call.headers }),
      {
        parsedBody: call.body,
      },
    );
    return { status: res.status, headers: [...res.headers], body: await res.text() };
  } finally {
    await server.close();
  }
}
