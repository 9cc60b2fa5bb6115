/*
 * The SOCKS5 listener on ROTA_SOCKS_PORT (RFC 1928, username/password per RFC 1929).
 *
 *   client ──greeting──▶ method   (user/pass when offered or required: the username carries parameters)
 *          ──user/pass─▶ status   (auth with the API key as password; parameters parsed)
 *          ──CONNECT───▶ SSRF rules ─▶ Executor(tunnelWork) ─▶ upstream proxy ─▶ target
 *          ◀── reply 0x00 only once a proxy is connected to the target; then bytes both ways (splice.ts)
 *
 * One small state machine per connection over the pure codec (socks5-protocol.ts). A handshake that does
 * not complete within 10 s, or any malformed message, closes the connection; nothing is kept after.
 */
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { closeSignal } from '../lib/abort.ts';
import { authority } from '../upstream/dial.ts';
import type { TunnelTarget } from '../upstream/tunnel.ts';
import { type Refusal, refusal } from './answers.ts';
import { destinationOf } from './connect.ts';
import type { ForwardGateway } from './gateway.ts';
import type { SocketRegistry } from './http-door.ts';
import type { IdleSweeper } from './idle-sweep.ts';
import { type InspectHook, inspectTunnel } from './inspect.ts';
import type { ListenerAuth } from './listener-auth.ts';
import type { ForwardMetrics } from './metrics.ts';
import { type ProxyParams, parseUsername } from './params.ts';
import {
  authStatus,
  COMMAND,
  METHOD,
  methodSelection,
  type Parsed,
  parseGreeting,
  parseRequest,
  parseUserPass,
  REPLY,
  reply,
  type Socks5Request,
} from './socks5-protocol.ts';
import { splice } from './splice.ts';

const HANDSHAKE_TIMEOUT_MS = 10_000;

export interface Socks5Deps {
  readonly gateway: ForwardGateway;
  readonly auth: ListenerAuth;
  readonly metrics: ForwardMetrics;
  /** Closes tunnels idle for ROTA_TUNNEL_IDLE_TIMEOUT_S. */
  readonly idle: IdleSweeper;
  readonly sockets: SocketRegistry;
  /** HTTPS inspection (forward/inspect.ts); absent: every tunnel is a plain one. */
  readonly inspect?: InspectHook | undefined;
}

type State =
  | { readonly step: 'greeting' }
  | { readonly step: 'auth' }
  | { readonly step: 'checking' }
  | { readonly step: 'request'; readonly params: ProxyParams }
  | { readonly step: 'connecting' };

/** The method to select: user/pass whenever offered (parameters) or required (auth); else none. */
function chooseMethod(methods: readonly number[], authRequired: boolean): number {
  if (methods.includes(METHOD.USER_PASS)) return METHOD.USER_PASS;
  if (!authRequired && methods.includes(METHOD.NO_AUTH)) return METHOD.NO_AUTH;
  return METHOD.NONE_ACCEPTABLE;
}

class Socks5Connection {
  #buf: Buffer = Buffer.alloc(0);
  #state: State = { step: 'greeting' };
  readonly #d: Socks5Deps;
  readonly #socket: net.Socket;
  readonly #onData = (chunk: Buffer) => {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    this.#advance();
  };

  constructor(d: Socks5Deps, socket: net.Socket) {
    this.#d = d;
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.setTimeout(HANDSHAKE_TIMEOUT_MS, () => socket.destroy());
    socket.on('error', () => socket.destroy());
    socket.on('data', this.#onData);
    d.sockets.add(socket);
    socket.once('close', () => d.sockets.delete(socket));
  }

  /** Consumes a parsed message; false (and the connection closed) when it was malformed or incomplete. */
  #take<T>(r: Parsed<T>): T | null {
    if (r.type === 'more') return null;
    if (r.type === 'bad') {
      if (r.reply !== undefined) this.#socket.end(reply(r.reply));
      else this.#socket.destroy();
      return null;
    }
    this.#buf = this.#buf.subarray(r.used);
    return r.value;
  }

  #advance(): void {
    while (!this.#socket.destroyed && this.#buf.length > 0) {
      const before = this.#buf.length;
      const s = this.#state;
      if (s.step === 'greeting') this.#greeting();
      else if (s.step === 'auth') this.#auth();
      else if (s.step === 'request') this.#request(s.params);
      else return;
      if (this.#buf.length === before) return; // waiting for more bytes
    }
  }

  #greeting(): void {
    const g = this.#take(parseGreeting(this.#buf));
    if (g === null) return;
    const method = chooseMethod(g.methods, this.#d.auth.required);
    this.#socket.write(methodSelection(method));
    if (method === METHOD.NONE_ACCEPTABLE) {
      this.#refuse('PROXY_AUTH_REQUIRED', 'no acceptable authentication method', null);
      return;
    }
    this.#state = method === METHOD.USER_PASS ? { step: 'auth' } : { step: 'request', params: { label: '' } };
  }

  #auth(): void {
    const creds = this.#take(parseUserPass(this.#buf));
    if (creds === null) {
      if (this.#socket.destroyed) this.#d.metrics.answered('socks5', 'BAD_REQUEST');
      return;
    }
    this.#state = { step: 'checking' };
    this.#check(creds).catch(() => this.#socket.destroy());
  }

  async #check(creds: { username: string; password: string }): Promise<void> {
    const verdict = await this.#d.auth.check({
      listener: 'socks5',
      clientIp: () => this.#socket.remoteAddress ?? '',
      method: 'SOCKS5',
      password: creds.password,
    });
    if (verdict.type !== 'ok') {
      const code = verdict.type === 'limited' ? 'RATE_LIMIT_EXCEEDED' : 'PROXY_AUTH_REQUIRED';
      this.#refuse(code, 'refused', authStatus(false));
      return;
    }
    const params = parseUsername(creds.username);
    if (!params.ok) {
      this.#refuse('INVALID_PROXY_PARAMS', params.reason, authStatus(false));
      return;
    }
    this.#socket.write(authStatus(true));
    this.#state = { step: 'request', params: params.params };
    this.#advance();
  }

  #request(params: ProxyParams): void {
    const req = this.#take(parseRequest(this.#buf));
    if (req === null) return;
    this.#state = { step: 'connecting' };
    this.#socket.off('data', this.#onData);
    this.#socket.pause();
    this.#connect(req, params).catch(() => this.#socket.destroy());
  }

  #refuse(code: Parameters<typeof refusal>[0], message: string, last: Buffer | null): void {
    const r: Refusal = refusal(code, message);
    this.#d.metrics.answered('socks5', r.code);
    if (last === null) this.#socket.end();
    else this.#socket.end(last);
  }

  async #connect(req: Socks5Request, params: ProxyParams): Promise<void> {
    const socket = this.#socket;
    if (req.command !== COMMAND.CONNECT) {
      this.#refuse('BAD_REQUEST', 'command not supported', reply(REPLY.COMMAND_NOT_SUPPORTED));
      return;
    }
    const dest = destinationOf(authority(req.address.host, req.address.port));
    if (dest === null) {
      this.#refuse('BAD_REQUEST', 'bad destination', reply(REPLY.GENERAL_FAILURE));
      return;
    }
    const inspect = this.#d.inspect;
    if (inspect?.decide(dest.target.hostname, params.inspect) === true) {
      await this.#inspect(inspect, dest.target, dest.origin, params);
      return;
    }
    const gone = closeSignal(socket);
    const out = await this.#d.gateway.tunnel(dest.target, params, gone.signal, dest.origin, 'socks5');
    gone.release();
    if (!out.ok) {
      this.#d.metrics.answered('socks5', out.refusal.code);
      socket.end(reply(out.refusal.socksReply));
      return;
    }
    this.#open(out.value, (up, down) => this.#d.gateway.ended(out, up, down));
  }

  /** Answered at once after the SSRF rules: the proxy is chosen per request inside (forward/inspect.ts). */
  async #inspect(
    inspect: InspectHook,
    target: TunnelTarget,
    origin: URL,
    params: ProxyParams,
  ): Promise<void> {
    const socket = this.#socket;
    const verdict = inspect.forbidden(origin);
    const blocked = verdict instanceof Promise ? await verdict : verdict;
    if (blocked !== null) {
      this.#d.metrics.answered('socks5', blocked.code);
      socket.end(reply(blocked.socksReply));
      return;
    }
    inspectTunnel(inspect.door, inspect.server, socket, target, params, this.#succeeded());
  }

  /** The success reply: the tunnel is the client's from now on. Returns what it sent ahead of it. */
  #succeeded(): Buffer {
    this.#d.metrics.answered('socks5', null);
    this.#socket.setTimeout(0);
    this.#socket.write(reply(REPLY.SUCCEEDED));
    const early = this.#buf;
    this.#buf = Buffer.alloc(0);
    return early;
  }

  /** `ended`: told the bytes each way once the tunnel is over (the request log's record). */
  #open(upstream: Duplex, ended: (up: number, down: number) => void): void {
    const socket = this.#socket;
    if (socket.destroyed) {
      upstream.destroy();
      ended(0, 0);
      return;
    }
    const early = this.#succeeded();
    if (early.length > 0) upstream.write(early);
    this.#d.metrics.tunnelOpened('socks5');
    splice(socket, upstream, this.#d.idle, (r) => {
      this.#d.metrics.tunnelClosed('socks5');
      this.#d.metrics.bytes('socks5', r.up + early.length, r.down);
      ended(r.up + early.length, r.down);
    });
  }
}

export function createSocks5Listener(d: Socks5Deps): net.Server {
  return net.createServer({ noDelay: true }, (socket) => {
    new Socks5Connection(d, socket);
  });
}
