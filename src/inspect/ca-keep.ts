/**
 * Rota's own CA kept in the store, so that every instance on a shared store signs with the same one:
 * the setting `inspection_ca` holds { v: 1, cert: PEM, key: sealed PEM, createdAt: ms }. The key is
 * sealed like source credentials (store.sealSecret, bound to the context `inspection_ca:key`).
 *
 * Two instances making the first CA at once agree through the store's atomic add (ProxyStore.addSetting,
 * an INSERT that does nothing where the key is taken): the first CA to land is the one; the other
 * instance reads it back and drops its own.
 *
 *   read ──found──▶ use it
 *     └─none──▶ make one ──addSetting──landed──▶ use it
 *                                └─taken──▶ read the one that landed, use it
 */
import { RotaError } from '../errors/rota-error.ts';
import type { ProxyStore } from '../store/types.ts';
import type { NewCa } from './ca-make.ts';

export const CA_SETTING = 'inspection_ca';
const SEAL_CONTEXT = 'inspection_ca:key';

interface StoredCa {
  readonly v: 1;
  readonly cert: string;
  readonly key: string;
  readonly createdAt: number;
}

export interface KeepOptions {
  readonly store: ProxyStore;
  readonly now: () => number;
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

/** The stored CA, made and added first when there is none. */
export async function keepInStore(o: KeepOptions): Promise<Kept> {
  const found = await read(o.store);
  if (found !== null) return { ca: open(o.store, found), created: false };
  const made = await o.make(o.now());
  const record: StoredCa = {
    v: 1,
    cert: made.certPem,
    key: o.store.sealSecret(made.keyPem, SEAL_CONTEXT),
    createdAt: o.now(),
  };
  if (await o.store.addSetting(CA_SETTING, record)) return { ca: made, created: true };
  // Another instance's CA landed first: that one is everybody's.
  const landed = await read(o.store);
  if (landed === null) {
    throw new RotaError(
      'SERVICE_UNAVAILABLE',
      'inspection: the stored CA went away as it was made; try again',
    );
  }
  return { ca: open(o.store, landed), created: false };
}
