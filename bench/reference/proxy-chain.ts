/**
 * Apify proxy-chain (npm), the peer forward proxy of the bench's `get`, `connect` and `bulk` scenarios.
 * `prepareRequestFunction` hands out the next squid port for every request and every CONNECT, so it
 * rotates over the same pool as Rota and the forward relay. Everything else is proxy-chain's default:
 * absolute-URI requests go through Node's global http.Agent (keep-alive since Node 19) to squid, CONNECT
 * through a CONNECT to squid; no authentication.
 *
 *   node bench/reference/proxy-chain.ts <listen port> <squid port>[,<squid port>...]
 */
import { Server } from 'proxy-chain';

const [portArg = '', proxiesArg = ''] = process.argv.slice(2);
const upstreams = proxiesArg.split(',').map((p) => `http://127.0.0.1:${Number(p)}`);
let next = 0;

const server = new Server({
  port: Number(portArg),
  host: '127.0.0.1',
  verbose: false,
  prepareRequestFunction: () => ({ upstreamProxyUrl: upstreams[next++ % upstreams.length]! }),
});
// Without a listener, proxy-chain's EventEmitter would not throw, but failures would go unseen.
let failures = 0;
server.on('requestFailed', ({ error }: { error: Error }) => {
  if (failures++ < 20) process.stderr.write(`proxy-chain requestFailed: ${error.message}\n`);
});
await server.listen();
process.stderr.write(`proxy-chain listening on 127.0.0.1:${server.port}\n`);
