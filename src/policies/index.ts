/**
 * Per-site policies (policies/schema.ts): what the composition root (services.ts) makes of them.
 *
 *   PUT policies ──▶ PolicyHolder (store, change bus) ──▶ RuleBook ──▶ CallPrelude (rule, session, host pace)
 *                                                                └──▶ eligibility (tags, countries, cap, pace)
 */
import type { SessionDefaults } from '../config.ts';
import type { SessionTerms } from '../rotation/sessions.ts';
import type { ProxyStore } from '../store/types.ts';
import { PolicyHolder } from './holder.ts';
import { HostPacer } from './pace.ts';

/** ROTA_SESSION_* as the engine applies them (outbound/prelude.ts SessionDefaultsMs). */
export interface SessionDefaultsMs {
  readonly terms: SessionTerms;
  readonly scope: 'all' | 'host';
  readonly keepOnBan: boolean;
}

export function sessionDefaults(s: SessionDefaults): SessionDefaultsMs {
  return {
    terms: Object.freeze({ idleMs: s.idleTtlS * 1000, maxMs: s.maxTtlS * 1000, maxRequests: s.maxRequests }),
    scope: s.scope,
    keepOnBan: s.onBan === 'keep',
  };
}

export interface Policies {
  readonly holder: PolicyHolder;
  readonly pacer: HostPacer;
  readonly sessions: SessionDefaultsMs;
}

export function createPolicies(sessions: SessionDefaults, store: ProxyStore): Policies {
  return { holder: new PolicyHolder(store), pacer: new HostPacer(), sessions: sessionDefaults(sessions) };
}

/** Whether the policy list says a tunnel to `host` is inspected: the first rule of the host that says. */
export function ruleInspects(holder: PolicyHolder, host: string): boolean | undefined {
  const book = holder.book();
  if (book.size === 0) return undefined;
  for (const r of book.forHost(host)) if (r.inspect !== undefined) return r.inspect;
  return undefined;
}
