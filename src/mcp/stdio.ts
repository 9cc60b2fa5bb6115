import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { RemoteBackend } from './remote.ts';
import { createMcpServer } from './server.ts';

/**
 * `rota mcp`: Rota's MCP server on standard input and output, for an MCP client that starts it (Claude
 * Desktop, an IDE, an agent). It talks to a running Rota at `url` with `apiKey` over the REST API, which
 * judges every call (the key, limits, SSRF rules): write tools go through and Rota refuses them when the
 * key is wrong or missing while auth is required. Standard output is the protocol's: diagnostics go to
 * standard error. Resolves when the client closes the connection.
 */
export async function runStdio(url: string, apiKey: string | undefined): Promise<void> {
  const server = createMcpServer(new RemoteBackend(url, apiKey), {
    mayWrite: true,
    onError: (err) => process.stderr.write(`rota mcp: ${err instanceof Error ? err.message : String(err)}\n`),
  });
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.onclose = resolve;
  });
  await server.connect(transport);
  // The client ending standard input is the end of the session.
  process.stdin.once('end', () => void server.close());
  await closed;
}
