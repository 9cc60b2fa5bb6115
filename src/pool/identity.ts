import type { ProxyEntry } from './pool.ts';
import { identityName, type ProxyRecord, publicUrl } from './types.ts';

/**
 * The members by identity (public URL + username: two members may share an address with different
 * accounts), for the duplicate check of every add.
 *
 * Why by URL first: a loaded record decrypts its username on first read (store/rows.ts), and keying the
 * index by URL + username would read all of them at start-up (about 380 ms of AES for 100,000 proxies).
 * Keyed by URL, a username is read only when an added proxy has the address of a member. The key is the
 * entry's own `url` string, so the index holds no string of its own.
 *
 * The members loaded at start-up are indexed on the first call that needs the index, not while they are
 * loaded: with 100,000 proxies from SQLite that took ~120 ms of a ~1.5 s start (--cpu-prof of the start),
 * paid instead by the first add or removal, if any comes.
 */
export class IdentityIndex {
  readonly #byUrl = new Map<string, ProxyEntry | ProxyEntry[]>();
  #unindexed: readonly ProxyEntry[] | null = null;

  /** Members to index on first use; they must not be passed to add() too. */
  defer(members: readonly ProxyEntry[]): void {
    this.#index();
    this.#unindexed = members;
  }

  /** Indexes the deferred members, once, before any read or change of the index. */
  #index(): Map<string, ProxyEntry | ProxyEntry[]> {
    const members = this.#unindexed;
    if (members !== null) {
      this.#unindexed = null;
      for (const e of members) this.#put(e);
    }
    return this.#byUrl;
  }

  has(
    record: Pick<
      ProxyRecord,
      'protocol' | 'host' | 'port' | 'username' | 'usernameTemplate' | 'passwordTemplate'
    >,
  ): boolean {
    const at = this.#index().get(publicUrl(record));
    if (at === undefined) return false;
    const name = identityName(record);
    if (!Array.isArray(at)) return identityName(at.record) === name;
    return at.some((e) => identityName(e.record) === name);
  }

  add(entry: ProxyEntry): void {
    this.#index();
    this.#put(entry);
  }

  #put(entry: ProxyEntry): void {
    const at = this.#byUrl.get(entry.url);
    if (at === undefined) this.#byUrl.set(entry.url, entry);
    else if (Array.isArray(at)) at.push(entry);
    else this.#byUrl.set(entry.url, [at, entry]);
  }

  delete(entry: ProxyEntry): void {
    const at = this.#index().get(entry.url);
    if (at === entry) this.#byUrl.delete(entry.url);
    else if (Array.isArray(at)) {
      const rest = at.filter((e) => e !== entry);
      if (rest.length === 0) this.#byUrl.delete(entry.url);
      else this.#byUrl.set(entry.url, rest.length === 1 ? (rest[0] as ProxyEntry) : rest);
    }
  }
}
