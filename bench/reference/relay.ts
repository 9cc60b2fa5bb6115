/**
 * The stack floor of the bench's `floor` scenario (BENCHMARKS.md, "Method"): the least a Node.js gateway on
 * Rota's stack can do per call, a yardstick. Not here: validation, SSRF rules, rotation strategy, breakers,
 * retries, logs, metrics, rate limits, security headers.
 *
 *   node bench/reference/relay.ts <listen port> <proxy port>[,<proxy port>...]
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Pool } from 'undici';
import { envelope } from './envelope.ts';

const [portArg = '', proxiesArg = ''] = process.argv.slice(2);
const pools = proxiesArg.split(',').map((p) => new Pool(`http://127.0.0.1:${Number(p)}`));
let next = 0;

async function relay(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const { url } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { url: string };
  const index = next++ % pools.length;
  const pool = pools[index]!;
  const started = performance.now();
  const r = await pool.request({ path: url, method: 'GET', headers: { host: new URL(url).host } });
  const body = await r.body.text();
  const out = envelope(r, body, index, started, { request_id: crypto.randomUUID(), version: 'relay' });
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
  res.end(out);
}

createServer((req, res) => {
  relay(req, res).catch((e: unknown) => {
    res.writeHead(502, { 'content-type': 'text/plain' });
    res.end(String(e));
  });
}).listen(Number(portArg), '127.0.0.1');
