/**
 * The inspection CA: the authority that signs the leaf certificates of inspected hosts.
 *
 *   const authority = new InspectionAuthority({ files: config.inspectCa, store, logger });
 *   await authority.caPem();     // the CA certificate(s), PEM, for clients to trust; never the key
 *   await authority.signer();    // the CA as leaves.ts signs with it (non-extractable key)
 *
 * Which CA, decided on first need (never at start):
 *   - ROTA_CA_CERT + ROTA_CA_KEY set: the operator's own CA, read from those files;
 *   - else a SQLite/PostgreSQL store: the CA kept in it (made and stored by the first instance to need
 *     one, its key sealed; ca-keep.ts), so every instance on that store uses the same CA;
 *   - else one made in memory, new at each start (logged once at warn).
 * A failed load (store down, files gone) leaves the authority as it was: the next need tries again.
 * The key never reaches a log line or an error message.
 */
import { createPrivateKey } from 'node:crypto';
import type { Logger } from 'pino';
import { RotaError } from '../errors/rota-error.ts';
import type { ProxyStore } from '../store/types.ts';
import { type CaFiles, readCaFiles, signingAlgorithmOf } from './ca-files.ts';
import { keepInStore } from './ca-keep.ts';
import type { CaOrigin, CaSigner, NewCa } from './ca-make.ts';

/** The CA maker (and @peculiar/x509 with it) is loaded on first need, not with the server (leaves.ts). */
const caMaker = () => import('./ca-make.ts');
const makeRotaCa = async (now: number): Promise<NewCa> => (await caMaker()).makeRotaCa(now);
const signerFrom = async (...a: Parameters<typeof import('./ca-make.ts')['signerFrom']>): Promise<CaSigner> =>
  (await caMaker()).signerFrom(...a);

export type { CaOrigin, CaSigner } from './ca-make.ts';

export interface AuthorityOptions {
  /** The operator's CA files (config.inspectCa), or null: Rota's own CA. */
  readonly files: CaFiles | null;
  /** Where Rota's own CA is kept; null or a memory store: in memory only. */
  readonly store: ProxyStore | null;
  readonly logger: Logger;
  /** Milliseconds since the epoch; the clock CA validity is judged and dated by. */
  readonly now?: () => number;
  /** Makes Rota's own CA (tests count or hold it). */
  readonly makeCa?: (now: number) => Promise<NewCa>;
}

type State =
  | { readonly kind: 'idle' }
  | { readonly kind: 'loading'; readonly promise: Promise<CaSigner> }
  | { readonly kind: 'ready'; readonly signer: CaSigner };

export class InspectionAuthority {
  #state: State = { kind: 'idle' };
  readonly #o: AuthorityOptions;
  readonly #now: () => number;

  constructor(opts: AuthorityOptions) {
    this.#o = opts;
    this.#now = opts.now ?? Date.now;
  }

  /** Where the CA in use came from; null until first need. */
  get origin(): CaOrigin | null {
    return this.#state.kind === 'ready' ? this.#state.signer.origin : null;
  }

  /** The CA certificate (with any intermediates the operator's file holds), PEM. Never the key. */
  async caPem(): Promise<string> {
    return (await this.signer()).chainPem;
  }

  /** The CA, loaded or made on first call; concurrent first calls share one load. */
  signer(): Promise<CaSigner> {
    const s = this.#state;
    if (s.kind === 'ready') return Promise.resolve(s.signer);
    if (s.kind === 'loading') return s.promise;
    const promise = this.#load().then(
      (signer) => {
        this.#state = { kind: 'ready', signer };
        return signer;
      },
      (err: unknown) => {
        this.#state = { kind: 'idle' };
        throw err;
      },
    );
    this.#state = { kind: 'loading', promise };
    return promise;
  }

  #load(): Promise<CaSigner> {
    const { files, store } = this.#o;
    if (files !== null) return this.#fromFiles(files);
    if (store !== null && store.backend !== 'memory') return this.#fromStore(store);
    return this.#inMemory();
  }

  async #fromFiles(files: CaFiles): Promise<CaSigner> {
    const read = readCaFiles(files, this.#now());
    if (!read.ok) throw new RotaError('CONFIGURATION_ERROR', `inspection: ${read.problems.join('; ')}`);
    const { chainPem, keyPem, algorithm } = read.material;
    const signer = await signerFrom(chainPem, keyPem, algorithm, 'operator');
    this.#o.logger.info(
      { ca: signer.cert.subject, certPath: files.certPath },
      'inspection: using the operator CA',
    );
    return signer;
  }

  async #fromStore(store: ProxyStore): Promise<CaSigner> {
    const kept = await keepInStore({
      store,
      now: this.#now,
      make: this.#o.makeCa ?? makeRotaCa,
    });
    const signer = await this.#signerOf(kept.ca, 'store');
    const msg = kept.created
      ? 'inspection: made a CA and kept it in the store'
      : 'inspection: using the stored CA';
    this.#o.logger.info({ ca: signer.cert.subject, backend: store.backend }, msg);
    return signer;
  }

  async #inMemory(): Promise<CaSigner> {
    const made = await (this.#o.makeCa ?? makeRotaCa)(this.#now());
    const signer = await this.#signerOf(made, 'memory');
    this.#o.logger.warn({ ca: signer.cert.subject }, 'inspection: a new CA each start (no persistent store)');
    return signer;
  }

  #signerOf(ca: NewCa, origin: CaOrigin): Promise<CaSigner> {
    const algorithm = signingAlgorithmOf(createPrivateKey(ca.keyPem));
    if (algorithm === null)
      throw new RotaError('CREDENTIAL_DECRYPT_ERROR', 'inspection: the CA key has an unusable type');
    return signerFrom(ca.certPem, ca.keyPem, algorithm, origin);
  }
}
