import { banHost } from '../bans/judge.ts';
import type { BreakerRegistry } from '../breaker/registry.ts';
import type { ProxyEntry } from '../pool/pool.ts';
import { poolEmptyError } from './call-error.ts';
import type { CallPrelude } from './prelude.ts';
import type { Selector } from './selector.ts';

/** GET rotate's question (http/routes/request.ts), which MCP's rotate tool asks too (mcp/local.ts). */
export interface RotateQuestion {
  readonly host?: string | undefined;
  readonly path?: string | undefined;
  readonly method?: string | undefined;
  readonly session_id?: string | undefined;
  readonly country?: string | undefined;
}

export interface RotateDeps {
  readonly prelude: CallPrelude;
  readonly selector: Selector;
  readonly breakers: BreakerRegistry;
  readonly now: () => number;
}

/**
 * The proxy a call would get, under the policy rule it would get: the rule the prelude matches, and the
 * session as the prelude keys it and with its terms (a rule's `scope: host` pin is the host's). A
 * selection like a call's (it advances the strategy and pins a session), so
 * the call that follows with that session gets the same proxy. PROXY_POOL_EMPTY when there is none.
 */
export function rotatePick(d: RotateDeps, q: RotateQuestion): { entry: ProxyEntry; policy: string | null } {
  // Named as a call names it (lower case, no trailing dot): the same rule, pin and cool-downs.
  const host = q.host === undefined ? undefined : banHost({ hostname: q.host });
  const rule = host === undefined ? null : d.prelude.ruleFor({ host, path: q.path, method: q.method });
  const id = q.session_id;
  const session = id === undefined || host === undefined ? null : d.prelude.sessionOf(id, host, rule);
  const entry = d.selector.pick({
    sessionId: session?.key ?? id,
    terms: session?.session.terms,
    keepOnBan: session?.session.keepOnBan,
    country: q.country?.toUpperCase(),
    host,
    coolingFallback: true,
    rule: rule ?? undefined,
  });
  // Same answer as a request would get, Retry-After included when every breaker is open.
  if (!entry) throw poolEmptyError(d.breakers.earliestHalfOpenAt(), d.now());
  return { entry, policy: rule?.name ?? null };
}
