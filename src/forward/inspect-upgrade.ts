/*
 * An upgrade (a WebSocket) inside an inspected connection (inspect.ts): one pick of the strategy for the
 * whole upgraded connection, which then stays on that proxy until either side closes.
 *
 *   client ══TLS (Rota's leaf)══▶ inner server 'upgrade'
 *      ──▶ gateway.tunnel(host:port) through a proxy picked now (SSRF rules, failover, records)
 *      ──▶ TLS with the target over that tunnel, verified with the engine's trust (dispatchers.ts)
 *      ──▶ the client's request head (minus Proxy-*, X-Rota-*) and its first bytes
 *      ◀── the target's answer head (101 or a refusal), X-Rota-Proxy-Id added, the target's X-Rota-* out
 *      ══▶ bytes both ways (splice.ts)
 *
 * Refused before any byte went up (bad request, no proxy, SSRF, TLS with the target failed): an answer
 * with X-Rota-Error on the client's socket, which then closes.
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import type tls from 'node:tls';
import { closeSignal } from '../lib/abort.ts';
import { callError } from '../outbound/call-error.ts';
import { UpstreamError } from '../upstream/types.ts';
import { type Refusal, refusal, refusalOf } from './answers.ts';
import type { Outcome } from './gateway.ts';
import { writeRawRefusal } from './http-door.ts';
import type { InspectDoorDeps } from './inspect.ts';
import { mergeHeaders, type ProxyParams } from './params.ts';
import { splice } from './splice.ts';

/** What the inspected connection knows: its target's origin and the tunnel's parameters. */
export interface UpgradeContext {
  readonly origin: URL;
  readonly params: ProxyParams;
}

/** The target's answer head is read whole before it is passed on; a longer one ends the connection. */
const MAX_ANSWER_HEAD = 64 * 1024;

/** Never sent up: the client's proxy credentials and Rota's own parameters. */
const NOT_SENT = /^(proxy-|x-rota-)/i;

/** Handles the inner server's 'upgrade' event; never throws for what a client or target does. */
export async function relayUpgrade(
  d: InspectDoorDeps,
  req: http.IncomingMessage,
  socket: Duplex,
  head: Buffer,
  t: UpgradeContext | undefined,
): Promise<void> {
  socket.on('error', () => socket.destroy());
  if (t === undefined || !req.url?.startsWith('/')) {
    return refuse(d, socket, refusal('BAD_REQUEST', 'Send origin-form requests (/path) for this host'));
  }
  const merged = mergeHeaders(t.params, {
    session: one(req.headers['x-rota-session']),
    country: one(req.headers['x-rota-country']),
  });
  if (!merged.ok) {
    return refuse(d, socket, refusal('INVALID_PROXY_PARAMS', `Invalid proxy parameters: ${merged.reason}`));
  }
  const up = await open(d, socket, t.origin, merged.params);
  if (!up.ok) return refuse(d, socket, up.refusal);
  // Errors end the socket; splice ties the two sockets' ends once it runs.
  up.value.on('error', () => up.value.destroy());
  if (socket.destroyed) {
    up.value.destroy();
    return d.gateway.ended(up, 0, 0);
  }
  up.value.write(requestHead(req));
  if (head.length > 0) up.value.write(head);
  const answered = await passAnswerHead(up.value, socket, up.proxyId, d.idle.idleMs);
  if (!answered) {
    up.value.destroy();
    socket.destroy();
    return d.gateway.ended(up, 0, 0);
  }
  d.metrics.answered('inspect', null);
  splice(socket, up.value, d.idle, (r) => {
    d.metrics.bytes('inspect', r.up + head.length, r.down);
    d.gateway.ended(up, r.up + head.length, r.down);
  });
}

function refuse(d: InspectDoorDeps, socket: Duplex, r: Refusal): void {
  d.metrics.answered('inspect', r.code);
  writeRawRefusal(socket, r);
}

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v.join(', ') : v;
}

/** A tunnel to the origin's host and port through a proxy picked now, and TLS with the target over it. */
async function open(
  d: InspectDoorDeps,
  socket: Duplex,
  origin: URL,
  params: ProxyParams,
): Promise<Outcome<tls.TLSSocket>> {
  const target = {
    hostname: origin.hostname.replace(/^\[|\]$/g, ''),
    port: origin.port === '' ? 443 : Number(origin.port),
  };
  const gone = closeSignal(socket);
  const out = await d.gateway.tunnel(target, params, gone.signal, origin, 'inspect');
  gone.release();
  if (!out.ok) return out;
  try {
    return { ...out, value: await d.gateway.targetTls(out.value, target) };
  } catch (err) {
    out.value.destroy();
    d.gateway.ended(out, 0, 0);
    // The engine's answer for the same failure of a request: TARGET_CERT_INVALID or REQUEST_FAILED.
    const failure = err instanceof UpstreamError ? err : tlsFailure(err);
    return { ok: false, refusal: refusalOf(callError(failure, [], false)) };
  }
}

function tlsFailure(cause: unknown): UpstreamError {
  return new UpstreamError('target_tls', 'TLS with the target failed', {
    mayHaveReachedTarget: false,
    cause,
  });
}

/** The client's request line and headers as it wrote them (names' case and order), minus NOT_SENT. */
function requestHead(req: http.IncomingMessage): string {
  const lines = [`${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/1.1`];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] ?? '';
    if (!NOT_SENT.test(name)) lines.push(`${name}: ${raw[i + 1] ?? ''}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** The target's answer head with X-Rota-Proxy-Id in place of any X-Rota-* line of the target's. */
function answerHead(raw: string, proxyId: string): string {
  const [status = '', ...headers] = raw.split('\r\n');
  const kept = headers.filter((l) => l !== '' && !/^x-rota-/i.test(l));
  return `${[status, ...kept, `X-Rota-Proxy-Id: ${proxyId}`].join('\r\n')}\r\n\r\n`;
}

/**
 * Reads the target's answer head (within `waitMs`), writes it to the client with the proxy's id, and
 * puts back what came after it. False when the target closed, sent too much, or took too long.
 */
function passAnswerHead(up: Duplex, client: Duplex, proxyId: string, waitMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      up.off('data', onData);
      up.off('close', onClose);
      resolve(ok);
    };
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf('\r\n\r\n');
      if (end === -1) {
        if (buf.length > MAX_ANSWER_HEAD) done(false);
        return;
      }
      up.pause();
      const rest = buf.subarray(end + 4);
      if (rest.length > 0) up.unshift(rest);
      client.write(answerHead(buf.subarray(0, end).toString('latin1'), proxyId));
      done(true);
    };
    const onClose = () => done(false);
    const timer = setTimeout(() => done(false), waitMs);
    up.on('data', onData);
    up.once('close', onClose);
  });
}
