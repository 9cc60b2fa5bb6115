/**
 * The policy list in use: persisted and shared like the ban policy (control/stored-policy.ts: the store
 * keeps it, the other instances re-read it when told on the change bus, services-start.ts), compiled into
 * a RuleBook again only when it changed.
 */
import { StoredPolicy } from '../control/stored-policy.ts';
import { checkPattern } from '../inspect/patterns.ts';
import type { ProxyStore } from '../store/types.ts';
import { RuleBook } from './rulebook.ts';
import { type PolicyList, PolicyListSchema } from './schema.ts';

const STORAGE_KEY = 'policies';

/** One problem the schema cannot see: where (under the body) and why. */
export interface PolicyProblem {
  readonly loc: (string | number)[];
  readonly msg: string;
  readonly input: unknown;
}

export class PolicyHolder {
  readonly #policy: StoredPolicy<PolicyList>;
  #book: RuleBook;
  #of: Readonly<PolicyList>;
  readonly #onRules: ((names: ReadonlySet<string>) => void)[] = [];

  constructor(store: ProxyStore) {
    this.#policy = new StoredPolicy(store, STORAGE_KEY, PolicyListSchema, { rules: [] });
    this.#of = this.#policy.get();
    this.#book = new RuleBook(this.#of);
  }

  /** Reads the stored list (at start, and when another instance says it changed). */
  async load(): Promise<boolean> {
    const found = await this.#policy.load();
    this.#tellRules();
    return found;
  }

  get(): Readonly<PolicyList> {
    return this.#policy.get();
  }

  /** The compiled list in use. */
  book(): RuleBook {
    const now = this.#policy.get();
    if (now !== this.#of) {
      this.#of = now;
      this.#book = new RuleBook(now);
    }
    return this.#book;
  }

  /** Replaces the whole list (checked first: policyProblems). Durable when it resolves. */
  async replace(list: PolicyList): Promise<Readonly<PolicyList>> {
    await this.#policy.update(canonical(list));
    this.#tellRules();
    return this.get();
  }

  /** Told after every update made here (shared state tells the other instances). */
  onChange(listener: () => void): void {
    this.#policy.onChange(listener);
  }

  /**
   * Told the rule names in use whenever the list may have changed, here or (load) on another instance:
   * per-rule series of rules gone are dropped on every instance, not only where the PUT was made.
   */
  onRules(listener: (names: ReadonlySet<string>) => void): void {
    this.#onRules.push(listener);
  }

  #tellRules(): void {
    if (this.#onRules.length === 0) return;
    const names = new Set(this.#policy.get().rules.map((r) => r.name));
    for (const l of this.#onRules) l(names);
  }
}

/** Host patterns in canonical form, countries upper case: what GET shows is what matching uses. */
function canonical(list: PolicyList): PolicyList {
  return {
    rules: list.rules.map((r) => {
      const hosts = [
        ...new Set(
          r.match.hosts.map((h) => {
            const c = checkPattern(h);
            return c.ok ? c.pattern : h;
          }),
        ),
      ];
      const out = { ...r, match: { ...r.match, hosts } };
      if (r.proxies?.countries) {
        out.proxies = { ...r.proxies, countries: r.proxies.countries.map((c) => c.toUpperCase()) };
      }
      return out;
    }),
  };
}

/** What the schema cannot check: host patterns, unique names, blank body patterns. */
export function policyProblems(list: PolicyList): PolicyProblem[] {
  const out: PolicyProblem[] = [];
  const seen = new Map<string, number>();
  list.rules.forEach((r, i) => {
    const at = (...loc: (string | number)[]) => ['rules', i, ...loc];
    const first = seen.get(r.name);
    if (first !== undefined)
      out.push({ loc: at('name'), msg: `name already used by rules[${first}]`, input: r.name });
    else seen.set(r.name, i);
    r.match.hosts.forEach((h, j) => {
      const c = checkPattern(h);
      if (!c.ok) out.push({ loc: at('match', 'hosts', j), msg: c.reason, input: h });
    });
    r.ban?.body_patterns?.forEach((p, j) => {
      if (p.trim() === '')
        out.push({ loc: at('ban', 'body_patterns', j), msg: 'must not be blank', input: p });
    });
  });
  return out;
}
