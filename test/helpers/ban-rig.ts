import { type BanTarget, startBanTarget } from '../fixtures/ban-target.ts';
import { type ForwardProxy, startForwardProxy } from '../fixtures/forward-proxy.ts';
import { addUpstream, type ListeningApp, listeningApp } from './forward.ts';

/**
 * A site that bans by address (fixtures/ban-target.ts) and fixture proxies that each leave from an
 * address of their own, in the pool of a Rota with its listeners: the set-up of the policy tests.
 */
export interface BanRig {
  readonly site: BanTarget;
  readonly proxies: readonly ForwardProxy[];
  readonly t: ListeningApp;
  /** The proxies' ids, in the order of `egress`. */
  readonly ids: readonly string[];
  close(): Promise<void>;
}

/** `fields[i]` are added to proxy i's POST proxies body (tags, country...). */
export async function banRig(
  egress: readonly string[],
  env: Record<string, string>,
  fields: readonly Record<string, unknown>[] = [],
): Promise<BanRig> {
  const site = await startBanTarget([]);
  const proxies = await Promise.all(egress.map((e) => startForwardProxy({ egress: e })));
  const t = await listeningApp(env);
  const ids: string[] = [];
  for (const [i, p] of proxies.entries()) {
    ids.push(await addUpstream(t, { url: `http://127.0.0.1:${p.port}`, ...fields[i] }));
  }
  return {
    site,
    proxies,
    t,
    ids,
    close: async () => {
      await t.close();
      await Promise.all([site.close(), ...proxies.map((p) => p.close())]);
    },
  };
}
