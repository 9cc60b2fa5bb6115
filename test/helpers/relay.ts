import { once } from 'node:events';
import net from 'node:net';

/**
 * A counting TCP relay to put in front of a proxy (or of Rota's listeners): it shows what crossed it,
 * whatever the proxy itself reports, and refuses proxy requests for anything off loopback.
 */

export interface Relay {
  /** `http://127.0.0.1:<port>` (meaningful for an HTTP proxy behind it). */
  readonly server: string;
  readonly port: number;
  /**
   * What the relay recognised in the client's stream, in order: every chunk that starts with an HTTP
   * request line (`CONNECT 127.0.0.1:443 HTTP/1.1`, `GET http://.../x HTTP/1.1`, or `GET /x HTTP/1.1`
   * inside a SOCKS tunnel), and SOCKS5 CONNECT requests as `SOCKS5 CONNECT host:port atyp=N`
   * (1 IPv4, 3 domain name, 4 IPv6 as `[::1]`).
   */
  readonly lines: string[];
  /** Requests for a host off loopback: refused here, never forwarded. */
  readonly refused: string[];
  /** How many of `lines` contain `text`. */
  count(text: string): number;
  /** How many tunnels (HTTP CONNECT or SOCKS5 CONNECT) were asked for exactly `host:port`. */
  tunnels(authority: string): number;
  close(): Promise<void>;
}

function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1' || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** The host an HTTP proxy request line asks for; null for an origin-form line (`GET /x HTTP/1.1`). */
function proxyTarget(line: string): string | null {
  const connect = /^CONNECT (\S+) HTTP\//.exec(line);
  if (connect?.[1]) return connect[1].replace(/:\d+$/, '');
  const absolute = /^[A-Z]+ (https?:\/\/\S+) HTTP\//.exec(line);
  if (!absolute?.[1]) return null;
  return URL.canParse(absolute[1]) ? new URL(absolute[1]).hostname : 'unparsable';
}

/** A SOCKS5 CONNECT request (RFC 1928 section 4) filling the chunk exactly; null for anything else. */
function socks5Connect(b: Buffer): { host: string; port: number; atyp: number } | null {
  if (b.length < 10 || b[0] !== 5 || b[1] !== 1 || b[2] !== 0) return null;
  const len = b[4] ?? 0;
  if (b[3] === 1 && b.length === 10) {
    return { host: [...b.subarray(4, 8)].join('.'), port: b.readUInt16BE(8), atyp: 1 };
  }
  if (b[3] === 3 && b.length === 7 + len) {
    return { host: b.toString('latin1', 5, 5 + len), port: b.readUInt16BE(5 + len), atyp: 3 };
  }
  if (b[3] === 4 && b.length === 22) {
    const groups = Array.from({ length: 8 }, (_, i) => b.readUInt16BE(4 + 2 * i).toString(16));
    // `[::1]`, as in a URL and in an HTTP CONNECT line.
    return { host: new URL(`http://[${groups.join(':')}]/`).hostname, port: b.readUInt16BE(20), atyp: 4 };
  }
  return null;
}

/** What a chunk from the client is, and the host it asks for when it asks for one. */
function classify(chunk: Buffer): { line: string; host: string | null; socks: boolean } | null {
  const http = /^[A-Z]+ \S+ HTTP\/[\d.]+\r?\n/.exec(
    chunk.toString('latin1', 0, Math.min(chunk.length, 4096)),
  );
  if (http) {
    const line = http[0].trimEnd();
    return { line, host: proxyTarget(line), socks: false };
  }
  const socks = socks5Connect(chunk);
  if (!socks) return null;
  const line = `SOCKS5 CONNECT ${socks.host}:${socks.port} atyp=${socks.atyp}`;
  return { line, host: socks.host, socks: true };
}

const HTTP_403 = 'HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n';
const SOCKS_NOT_ALLOWED = Buffer.from([5, 2, 0, 1, 0, 0, 0, 0, 0, 0]);

/**
 * A TCP relay to 127.0.0.1:`upstreamPort` that records what crosses it (see Relay.lines) and refuses
 * proxy requests (HTTP or SOCKS5) for anything but loopback, so that nothing behind it leaves the machine.
 */
export async function startRelay(upstreamPort: number): Promise<Relay> {
  const lines: string[] = [];
  const refused: string[] = [];
  const open = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    open.add(s);
    s.on('close', () => open.delete(s));
    s.on('error', () => {});
  };
  const srv = net.createServer((client) => {
    const up = net.connect({ host: '127.0.0.1', port: upstreamPort });
    track(client);
    track(up);
    up.pipe(client);
    up.on('close', () => client.destroy());
    client.on('close', () => up.destroy());
    client.on('data', (chunk: Buffer) => {
      const seen = classify(chunk);
      if (seen && seen.host !== null && !isLoopbackHost(seen.host)) {
        refused.push(seen.line);
        client.end(seen.socks ? SOCKS_NOT_ALLOWED : HTTP_403);
        up.destroy();
        return;
      }
      if (seen) lines.push(seen.line);
      if (!up.write(chunk)) {
        client.pause();
        up.once('drain', () => client.resume());
      }
    });
    client.on('end', () => up.end());
  });
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const addr = srv.address();
  if (addr === null || typeof addr === 'string') throw new Error('relay: no port');
  return {
    server: `http://127.0.0.1:${addr.port}`,
    port: addr.port,
    lines,
    refused,
    count: (text) => lines.filter((l) => l.includes(text)).length,
    tunnels: (authority) =>
      lines.filter((l) => /^(?:SOCKS5 )?CONNECT (\S+)/.exec(l)?.[1] === authority).length,
    close: async () => {
      for (const s of open) s.destroy();
      srv.close();
      await once(srv, 'close');
    },
  };
}
