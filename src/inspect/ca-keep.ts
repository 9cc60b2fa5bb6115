/**
 * Rota's own CA kept in the store, so that every instance on a shared store signs with the same one:
 * the setting `inspection_ca` holds { v: 1, cert: PEM, key: sealed PEM, createdAt: ms }. The key is
 * sealed like source credentials (store.sealSecret, bound to the context `inspection_ca:key`).
 *
 * The store has no put-if-absent, only last-writer-wins puts, so two instances making the first CA at
 * once can both write. They agree by settling: whoever made one, or found one younger than FRESH_MS,
 * re-reads every `settleMs` until two reads in a row give the same CA, and takes that one. A rival
 * writes within one store round trip of its own "still absent" read (the CA is made before that read),
 * so by the time two reads `settleMs` apart agree every racing write has landed. A stall longer than
 * `settleMs` between that read and that write (a GC pause, a frozen host) could still split the two;
 * an atomic put-if-absent in ProxyStore would close that gap.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { RotaError } from '../errors/rota-error.ts';
import type { ProxyStore } from '../store/types.ts';
import type { NewCa } from './ca-make.ts';

export const CA_SETTING = 'inspection_ca';
const SEAL_CONTEXT = 'inspection_ca:key';
/** A stored CA older than this was not made in a race still running: taken without settling. */
const FRESH_MS = 60_000;
const MAX_ROUNDS = 20;

interface StoredCa {
  readonly v: 1;
  readonly cert: string;
  readonly key: string;
  readonly createdAt: number;
}

export interface KeepOptions {
  readonly store: ProxyStore;
  readonly now: () => number;
  readonly settleMs: number;
  readonly make: (now: number) => Promise<NewCa>;
}

/** The CA every instance on the store uses, with its key opened; `created` when this call's CA won. */
export interface Kept {
  readonly ca: NewCa;
  readonly created: boolean;
}

function isStoredCa(v: unknown): v is StoredCa {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return (
    o.v === 1 && typeof o.cert === 'string' && typeof o.key === 'string' && typeof o.createdAt === 'number'
  );
}

async function read(store: ProxyStore): Promise<StoredCa | null> {
  const v = await store.getSetting(CA_SETTING);
  if (v === null || v === undefined) return null;
  if (isStoredCa(v)) return v;
  throw new RotaError(
    'CREDENTIAL_DECRYPT_ERROR',
    `inspection: the stored CA (setting ${CA_SETTING}) is malformed`,
  );
}

function open(store: ProxyStore, stored: StoredCa): NewCa {
  try {
    return { certPem: stored.cert, keyPem: store.openSecret(stored.key, SEAL_CONTEXT) };
  } catch (err) {
    throw new RotaError(
      'CREDENTIAL_DECRYPT_ERROR',
      `inspection: the stored CA's key (setting ${CA_SETTING}) cannot be opened; was the storage key changed?`,
      { cause: err },
    );
  }
}

/** Reads until two reads `settleMs` apart give the same CA. */
async function settle(o: KeepOptions): Promise<StoredCa> {
  let prev = await read(o.store);
  for (let i = 0; i < MAX_ROUNDS; i++) {
    await sleep(o.settleMs);
    const cur = await read(o.store);
    if (cur !== null && cur.cert === prev?.cert) return cur;
    prev = cur;
  }
  throw new RotaError('SERVICE_UNAVAILABLE', 'inspection: the CA in the store did not settle; try again');
}

/** The stored CA, made and stored first when there is none. */
export async function keepInStore(o: KeepOptions): Promise<Kept> {
  const found = await read(o.store);
  if (found !== null && o.now() - found.createdAt >= FRESH_MS)
    return { ca: open(o.store, found), created: false };
  let mine: string | null = null;
  if (found === null) {
    const made = await o.make(o.now());
    const record: StoredCa = {
      v: 1,
      cert: made.certPem,
      key: o.store.sealSecret(made.keyPem, SEAL_CONTEXT),
      createdAt: o.now(),
    };
    if ((await read(o.store)) === null) {
      await o.store.putSetting(CA_SETTING, record);
      mine = record.cert;
    }
  }
  const settled = await settle(o);
  return { ca: open(o.store, settled), created: settled.cert === mine };
}
