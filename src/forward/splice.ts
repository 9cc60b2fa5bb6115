import type { Duplex } from 'node:stream';
import { directReadsOf } from '../upstream/direct-reads.ts';
import type { IdleSweeper } from './idle-sweep.ts';

/**
 * Joins a client socket to an upstream tunnel, both ways, until either side is done.
 *
 *   client ══ bytes up ══▶ upstream proxy ══▶ target
 *   client ◀═ bytes down ═ upstream proxy ◀══ target
 *
 * pipe() carries backpressure both ways (a slow reader pauses the other side's socket, nothing piles up
 * in memory) and half-closes (a FIN travels on). When one side is gone the other is freed: a client that
 * leaves destroys the upstream socket at once; an upstream that closes ends the client once what it sent
 * is flushed. A tunnel with no byte either way for the sweeper's idle time is closed (idle-sweep.ts).
 */
export interface SpliceResult {
  /** Client to upstream, and upstream to client, bytes. */
  readonly up: number;
  readonly down: number;
}

interface Counted {
  readonly bytesRead?: number;
  readonly bytesWritten?: number;
}

function bytes(s: Duplex, which: 'bytesRead' | 'bytesWritten'): number {
  return (s as Counted)[which] ?? 0;
}

export function splice(
  client: Duplex,
  upstream: Duplex,
  idle: IdleSweeper,
  onEnd: (r: SpliceResult) => void,
): void {
  // Sockets count what passed through them; what they carried before the tunnel (the CONNECT head, the
  // 200) is not the tunnel's.
  const read0 = bytes(client, 'bytesRead');
  const written0 = bytes(client, 'bytesWritten');
  let ended = false;
  const unwatch = idle.watch(client, upstream, () => {
    client.destroy();
    upstream.destroy();
  });
  const finish = () => {
    if (ended) return;
    ended = true;
    unwatch();
    onEnd({ up: bytes(client, 'bytesRead') - read0, down: bytes(client, 'bytesWritten') - written0 });
  };
  // The HTTP server's own socket timeout outlives the CONNECT (node:http only drops its listener): off,
  // or Node would refresh a timer on every chunk of the tunnel for nothing.
  (client as Duplex & { setTimeout?: (ms: number) => void }).setTimeout?.(0);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
  client.once('close', () => {
    upstream.destroy();
    finish();
  });
  upstream.once('close', () => {
    // What the upstream sent may still be queued towards the client: end it, then make sure it goes.
    // Not when the client has already ended or gone: end() then makes (and drops) an ERR_STREAM_*
    // error, stack and all, which a --cpu-prof of the CONNECT path showed on most tunnels.
    if (client.destroyed) return;
    if (!client.writableEnded) client.end();
    (client as Duplex & { destroySoon?: () => void }).destroySoon?.();
  });
  client.pipe(upstream);
  // A tunnel socket that reads into memory of its own writes it to the client without a copy.
  const reads = directReadsOf(upstream);
  if (reads) reads.relayTo(client);
  else upstream.pipe(client);
}
