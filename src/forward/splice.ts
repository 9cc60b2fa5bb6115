import type { Duplex } from 'node:stream';
import { directReadsOf } from '../upstream/direct-reads.ts';
import type { IdleSweeper } from './idle-sweep.ts';

/**
 * Joins a client socket to an upstream tunnel, both ways, until either side is done.
 *
 *   client ══ bytes up ══▶ upstream proxy ══▶ target
 *   client ◀═ bytes down ═ upstream proxy ◀══ target
 *
 * Backpressure both ways (a slow reader pauses the other side's socket, nothing piles up in memory) and
 * half-closes (a FIN travels on). When one side is gone the other is freed: a client that
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
  const reads = directReadsOf(upstream);
  const unwatch = idle.watch(client, upstream, () => {
    client.destroy();
    upstream.destroy();
  });
  const finish = () => {
    if (ended) return;
    ended = true;
    unwatch();
    reads?.release();
    onEnd({ up: bytes(client, 'bytesRead') - read0, down: bytes(client, 'bytesWritten') - written0 });
  };
  // A socket timeout left from an absolute-URI request on the same connection (node:http's keep-alive
  // timeout) outlives the CONNECT (node:http only drops its listener): off, or Node would refresh a timer
  // on every chunk of the tunnel for nothing.
  const timed = client as Duplex & { timeout?: number; setTimeout?: (ms: number) => void };
  if (timed.timeout) timed.setTimeout?.(0);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
  // once(), not on(), though 'close' comes once: a listener that stays keeps what it reaches alive as long
  // as the closed socket, which can outlive the tunnel (DirectReads.release says why that costs).
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
  carry(client, upstream);
  // A tunnel socket that reads into memory of its own writes it to the client without a copy.
  if (reads) reads.relayTo(client);
  else carry(upstream, client);
}

/**
 * `from`'s bytes to `to` with backpressure, and its end: what pipe() does here, with two listeners
 * instead of pipe()'s seven (the sockets' lives are tied by splice's 'close' listeners, so none of
 * pipe()'s unpiping is needed). A --cpu-prof and a heap profile of new tunnels per second had pipe()
 * among the larger costs of a tunnel.
 */
function carry(from: Duplex, to: Duplex): void {
  const resume = () => from.resume();
  from.on('data', (chunk: Buffer) => {
    // After the other side is gone a write only makes an error (with its stack) to drop.
    if (to.destroyed || to.write(chunk)) return;
    from.pause();
    to.once('drain', resume);
  });
  from.on('end', () => {
    if (!to.destroyed && !to.writableEnded) to.end();
  });
  // A door that read its handshake may have paused the socket: flow now (as pipe() does).
  if (!from.readableFlowing) from.resume();
}
