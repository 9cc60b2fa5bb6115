import { type RotaErrorCode, specOf, wireCode } from './codes.ts';

/** One problem found in a value (a request field, a configuration entry), for the error's `detail`. */
export interface DetailItem {
  loc: (string | number)[];
  msg: string;
  type: string;
  input: unknown;
  ctx: Record<string, unknown>;
}

export interface RotaErrorOptions {
  /** What the envelope's `error.details` shows. */
  readonly details?: unknown;
  /** Validation items, for the envelope's `detail`. */
  readonly detail?: DetailItem[];
  /** Headers of the answer (Retry-After). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly cause?: unknown;
}

/**
 * An error of Rota's own: a code of the registry (codes.ts), a message safe to show (the code's own when
 * none is given), and what the answer carries beside it. Its status is the code's: there is no override.
 */
export class RotaError extends Error {
  readonly code: RotaErrorCode;
  readonly details: unknown;
  readonly detail: DetailItem[] | undefined;
  readonly headers: Readonly<Record<string, string>> | undefined;

  constructor(code: RotaErrorCode, message?: string, opts: RotaErrorOptions = {}) {
    super(message ?? specOf(code).message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'RotaError';
    this.code = code;
    this.details = opts.details ?? null;
    this.detail = opts.detail;
    this.headers = opts.headers;
  }

  /** The HTTP status every door answers with. */
  get status(): number {
    return specOf(this.code).status;
  }

  /** The same, under the name Fastify reads from thrown errors. */
  get statusCode(): number {
    return this.status;
  }

  /** The SOCKS5 reply of the SOCKS5 listener. */
  get socksReply(): number {
    return specOf(this.code).socks;
  }

  /** The code clients see. */
  get wireCode(): string {
    return wireCode(this.code);
  }
}

/** `err` when it is one of Rota's errors with `code`. */
export function isRotaError(err: unknown, code?: RotaErrorCode): err is RotaError {
  return err instanceof RotaError && (code === undefined || err.code === code);
}

/**
 * A 4xx about one field of the request: `item` says where and why, in `details` and in `detail` (the
 * validation errors' shape, docs/decisions.md).
 */
export function fieldError(code: RotaErrorCode, message: string, item: DetailItem): RotaError {
  return new RotaError(code, message, { details: [item], detail: [item] });
}
