/**
 * The MCP SDK costs start-up time and idle memory: a started Rota has not loaded it, and loads it on the
 * first request to /mcp. A load hook in the server process (module.registerHooks) appends to a file
 * every module URL of the SDK it loads.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startServer } from './helpers/server.ts';

test('a started Rota has not loaded the MCP SDK; the first POST /mcp loads it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rota-mcp-lazy-'));
  const seen = join(dir, 'sdk-modules.txt');
  const hook = join(dir, 'hook.mjs');
  writeFileSync(
    hook,
    `import { registerHooks } from 'node:module';
import { appendFileSync } from 'node:fs';
registerHooks({
  load(url, context, next) {
    if (url.includes('@modelcontextprotocol')) appendFileSync(${JSON.stringify(seen)}, url + '\\n');
    return next(url, context);
  },
});
`,
  );
  const server = await startServer({ NODE_OPTIONS: `--import ${hook}` });
  try {
    const status = await fetch(`${server.url}/api/v1/status`);
    assert.equal(status.status, 200);
    assert.equal(existsSync(seen), false, 'no module of the SDK is loaded before /mcp is asked');
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { result: { serverInfo: { name: string } } };
    assert.equal(body.result.serverInfo.name, 'rota');
    assert.match(readFileSync(seen, 'utf8'), /@modelcontextprotocol\/sdk\/dist\/esm\/server\//);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
