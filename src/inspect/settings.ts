/**
 * Which CONNECT tunnels HTTPS inspection opens (terminates TLS for), as the operator set it:
 *   - `hosts`: inspected without the client asking (ROTA_INSPECT_HOSTS until a PUT changes it);
 *   - `passthrough`: never inspected, whatever `hosts` or the client says.
 * Persisted and shared like the ban policy (control/stored-policy.ts): only the lists a PUT set are
 * stored, so a list nobody changed at runtime keeps following its variable across restarts; the other
 * instances re-read it when told on the change bus (services-start.ts).
 *
 * The decision for one tunnel (decide):
 *   passthrough names the host ──▶ no
 *   the client asked `inspect-off` ──▶ no
 *   the client asked `inspect-on` ──▶ yes (even with `hosts` empty)
 *   the first policy rule of the host that sets `inspect` ──▶ what it says
 *   otherwise ──▶ whether `hosts` names it
 */
import { type Static, Type } from 'typebox';
import type { Config } from '../config.ts';
import { StoredPolicy } from '../control/stored-policy.ts';
import type { ProxyStore } from '../store/types.ts';
import { compilePatterns, type HostMatcher, MAX_PATTERNS, normalizeHost } from './patterns.ts';

/** What the client asked in its proxy username (`-inspect-on` / `-inspect-off`), or nothing. */
export type ClientAsk = 'on' | 'off' | undefined;

/** The stored shape (one setting); patterns are checked again when compiled. */
const ListsSchema = Type.Object({
  hosts: Type.Array(Type.String(), { maxItems: MAX_PATTERNS }),
  passthrough: Type.Array(Type.String(), { maxItems: MAX_PATTERNS }),
});
export type InspectionLists = Static<typeof ListsSchema>;

export type ListsSource = 'environment' | 'storage';

const STORAGE_KEY = 'inspection_hosts';

interface Compiled {
  readonly of: Readonly<InspectionLists>;
  readonly hosts: HostMatcher;
  readonly passthrough: HostMatcher;
}

function compile(lists: Readonly<InspectionLists>): Compiled {
  return { of: lists, hosts: compilePatterns(lists.hosts), passthrough: compilePatterns(lists.passthrough) };
}

export class InspectionSettings {
  readonly #policy: StoredPolicy<InspectionLists>;
  #compiled: Compiled;

  /** What the policy list says of a host's tunnels (policies/index.ts ruleInspects); undefined: nothing. */
  readonly #ruleSays: (host: string) => boolean | undefined;

  constructor(
    store: ProxyStore,
    config: Pick<Config, 'inspectHosts'>,
    ruleSays: (host: string) => boolean | undefined = () => undefined,
  ) {
    this.#ruleSays = ruleSays;
    const base = { hosts: [...config.inspectHosts], passthrough: [] };
    this.#policy = new StoredPolicy(store, STORAGE_KEY, ListsSchema, base);
    this.#compiled = compile(this.#policy.get());
  }

  /** Applies what earlier PUTs stored; true when something was. */
  load(): Promise<boolean> {
    return this.#policy.load();
  }

  /** The lists in use (canonical patterns; a stored pattern no longer valid is left out). */
  get(): Readonly<InspectionLists> {
    const c = this.#current();
    return { hosts: [...c.hosts.patterns], passthrough: [...c.passthrough.patterns] };
  }

  /** Where `hosts` comes from: ROTA_INSPECT_HOSTS, or a PUT (stored). */
  get hostsSource(): ListsSource {
    return this.#policy.overrides.hosts === undefined ? 'environment' : 'storage';
  }

  /** Absent lists stay. Patterns must be canonical (normalizePatterns). Durable when it resolves. */
  async update(patch: Partial<InspectionLists>): Promise<Readonly<InspectionLists>> {
    await this.#policy.update(patch);
    return this.get();
  }

  /** Told after every update made here (shared state tells the other instances). */
  onChange(listener: () => void): void {
    this.#policy.onChange(listener);
  }

  /** Whether the tunnel to `host` (a CONNECT target's or SNI host) is inspected. */
  decide(host: string, clientAsk: ClientAsk): boolean {
    const c = this.#current();
    const rule = clientAsk === undefined ? this.#ruleSays(host) : undefined;
    // Every CONNECT and SOCKS5 tunnel asks: with inspection unused, the answer costs no normalisation.
    if (clientAsk === undefined && rule === undefined && c.hosts.patterns.length === 0) return false;
    const h = normalizeHost(host);
    if (c.passthrough.matchesNormal(h)) return false;
    if (clientAsk !== undefined) return clientAsk === 'on';
    if (rule !== undefined) return rule;
    return c.hosts.matchesNormal(h);
  }

  /** The matchers of the lists in use, compiled again only when the lists changed (a PUT, a reload). */
  #current(): Compiled {
    const lists = this.#policy.get();
    if (this.#compiled.of !== lists) this.#compiled = compile(lists);
    return this.#compiled;
  }
}
