/*
 * Where a request head's Host and Connection lines go.
 *
 * undici keeps the names and the order of the headers it is given (an array of name/value pairs is
 * written as is), but it writes every request head itself as one string, always in this shape
 * (internals.test.ts fails when its client no longer does)
 * (node_modules/undici/lib/dispatcher/client-h1.js, writeH1):
 *
 *     GET /path HTTP/1.1\r\n
 *     host: <the Host it was given, else the origin's>\r\n          always second, lower-case
 *     connection: keep-alive\r\n       (or `close`)                 always third, lower-case
 *     <the given headers, in their order and case>
 *     content-length: N / transfer-encoding: chunked                 when there is a body, last
 *
 * and it has no option to place or leave out those two lines. A target comparing a client's header
 * order with a browser's (anti-bot checks do) sees them, so the doors mark where their client had Host
 * and Connection with a slot line (`x-rota-slot: <the client's spelling>`), and every connection undici
 * writes to through a proxy (dial.ts toConnector) passes the head through placeHead() as it is written:
 *
 *     host line       ──▶ the Host slot, under the client's spelling (no slot: stays where undici put it)
 *     connection line ──▶ the Connection slot, likewise (no slot: left out: HTTP/1.1 connections
 *                         persist without it, and undici closes one it meant to close on its own)
 *
 * What stays undici's: the framing of a body (`content-length` / `transfer-encoding`, lower-case, after
 * the headers), and the values of Host (the target URL's authority) and Connection (undici's own choice).
 */
import type net from 'node:net';
import { trickOn } from './tricks.ts';

/**
 * The `head-order` trick (tricks.ts): on unless ROTA_RUNTIME_OFF names it. Off, no slot is written
 * (forwarded-headers.ts) and no head is touched: undici's Host and Connection lines stay where it puts them.
 */
export const HEAD_ORDER = trickOn('head-order');

/** The slot header's name; X-Rota-* never comes from a client, so no client header can be taken for one. */
export const SLOT = 'x-rota-slot';

const SLOT_LINE = `\r\n${SLOT}: `;

/**
 * The head as the target should see it; anything that is not the head of a request as undici writes it
 * (a body chunk, chunked framing) is returned as is, after two character comparisons at most.
 */
export function placeHead(head: string): string {
  const line = head.indexOf('\r\n');
  if (line <= 0 || !head.startsWith('host: ', line + 2)) return head;
  const hostEnd = head.indexOf('\r\n', line + 8);
  if (hostEnd < 0 || !head.startsWith('connection: ', hostEnd + 2)) return head;
  const connEnd = head.indexOf('\r\n', hostEnd + 14);
  if (connEnd < 0) return head;
  const conn = head.slice(hostEnd + 14, connEnd);
  // `connection: upgrade` comes with an `upgrade:` line: not a request Rota forwards; left alone.
  if (conn === 'upgrade') return head;
  let slot = head.indexOf(SLOT_LINE, connEnd);
  if (slot < 0) return head.slice(0, hostEnd) + head.slice(connEnd);
  const host = head.slice(line + 8, hostEnd);
  let out = head.slice(0, line);
  let from = connEnd;
  let hostPlaced = false;
  let connPlaced = false;
  while (slot >= 0) {
    const end = head.indexOf('\r\n', slot + SLOT_LINE.length);
    const name = head.slice(slot + SLOT_LINE.length, end < 0 ? head.length : end);
    out += head.slice(from, slot);
    const lower = name.toLowerCase();
    if (lower === 'host' && !hostPlaced) {
      out += `\r\n${name}: ${host}`;
      hostPlaced = true;
    } else if (lower === 'connection' && !connPlaced) {
      out += `\r\n${name}: ${conn}`;
      connPlaced = true;
    }
    from = end < 0 ? head.length : end;
    slot = end < 0 ? -1 : head.indexOf(SLOT_LINE, end);
  }
  out += head.slice(from);
  return hostPlaced ? out : `${out.slice(0, line)}\r\nhost: ${host}${out.slice(line)}`;
}

type Write = net.Socket['write'];
type PlainWrite = (this: net.Socket, chunk: unknown, encoding: unknown, cb: unknown) => boolean;

/**
 * Makes `socket` place the heads undici writes to it. undici writes a head as one latin1 string (and
 * bodies as buffers), so only such strings are looked at; one closure per connection, none per write.
 */
export function placeHeads(socket: net.Socket): void {
  const write = socket.write as unknown as PlainWrite;
  const placing = function (this: net.Socket, chunk: unknown, encoding?: unknown, cb?: unknown) {
    const c = typeof chunk === 'string' && encoding === 'latin1' ? placeHead(chunk) : chunk;
    return write.call(this, c, encoding, cb);
  };
  socket.write = placing as unknown as Write;
}
