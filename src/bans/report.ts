import { fieldError, RotaError } from '../errors/rota-error.ts';
import type { Cooldown } from './cooldowns.ts';
import { type BanJudge, banHost } from './judge.ts';

/** A ban a client reports (POST bans, MCP's bans tool), as both answer it. */
export interface ReportedBan {
  readonly proxy_id: string;
  readonly host: string;
  readonly until: string;
  readonly count: number;
}

/**
 * The exit a reported ban through gateway `proxyId` is about (outbound/gateways.ts reportedExit): the
 * provider session of `sessionId` for `host` (its ban key, and moving the session to the next one), or
 * `key: null` when no session names it; null when `proxyId` is no gateway.
 */
export type ExitOf = (
  proxyId: string,
  host: string,
  sessionId: string | undefined,
) => { readonly key: string | null; move(): void } | null;

/**
 * A ban a client saw where Rota could not (inside a tunnel): 404 PROXY_NOT_FOUND for a proxy not in the
 * pool, else the pair cools down through BanJudge.report (the one table, its doubling and bounds). For a
 * gateway it is its provider session's exit that cools, as with a ban Rota sees (never the gateway, which
 * every other session and client uses), and the session moves to the next one; without `session_id` there
 * is no exit to name (each call without one had its own): 422.
 */
export function reportBan(
  d: { readonly bans: BanJudge; readonly known: (id: string) => boolean; readonly exitOf?: ExitOf },
  b: {
    readonly proxy_id: string;
    readonly host: string;
    readonly cooldown_s?: number | undefined;
    readonly session_id?: string | undefined;
  },
): ReportedBan {
  if (!d.known(b.proxy_id)) {
    throw new RotaError('PROXY_NOT_FOUND', 'Proxy not found', { details: { proxy_id: b.proxy_id } });
  }
  const host = banHost({ hostname: b.host });
  const exit = d.exitOf?.(b.proxy_id, host, b.session_id) ?? null;
  if (exit !== null && exit.key === null) throw noSession();
  const e = d.bans.report(exit?.key ?? b.proxy_id, host, b.cooldown_s);
  exit?.move();
  return { proxy_id: b.proxy_id, host: e.host, until: new Date(e.until).toISOString(), count: e.count };
}

function noSession(): RotaError {
  const item = {
    loc: ['body', 'session_id'],
    msg: "A gateway's exits are its provider sessions: name the session of the call that was banned",
    type: 'missing',
    input: null,
    ctx: {},
  };
  return fieldError('VALIDATION_ERROR', 'A ban through a gateway needs the session_id', item);
}

/** One active cool-down as GET bans and MCP's bans tool list it (a gateway exit's digest when it is one). */
export function cooldownView(c: Cooldown): ReportedBan & { exit?: string } {
  const view = { proxy_id: c.proxyId, host: c.host, until: new Date(c.until).toISOString(), count: c.count };
  return c.exit === undefined ? view : { ...view, exit: c.exit };
}
