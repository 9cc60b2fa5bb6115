import type { FastifyBaseLogger } from 'fastify';

type Bindings = Record<string, unknown>;
type LogArgs = [obj: unknown, msg?: string, ...args: unknown[]];
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/**
 * Fastify builds a child logger for every request. pino's child() serialises the bindings and walks
 * them through redaction: a few µs and ~4 KB of garbage per call, for a logger that a successful
 * request never uses (its one request line is written by the onResponse hook). This stands in for the
 * child and builds the real one on the first line written through it.
 */
export class LazyChildLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings) {
    this.#parent = parent;
    this.#bindings = bindings;
  }

  /** Whether the real child exists yet (tests). */
  get materialised(): boolean {
    return this.#child !== undefined;
  }

  #real(): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings);
    return this.#child;
  }

  #write(level: Level, args: LogArgs): void {
    // The level check first: a line below the threshold must not cost a child either.
    if (!this.isLevelEnabled(level)) return;
    const real = this.#real();
    (real[level] as (...a: unknown[]) => void).apply(real, args);
  }

  isLevelEnabled(level: string): boolean {
    // pino has it; a logger without it (tests' stand-ins) writes everything, as before.
    const l = (this.#child ?? this.#parent) as { isLevelEnabled?: (level: string) => boolean };
    return typeof l.isLevelEnabled === 'function' ? l.isLevelEnabled(level) : true;
  }

  get level(): string {
    return (this.#child ?? this.#parent).level;
  }

  set level(level: string) {
    this.#real().level = level;
  }

  fatal(...args: LogArgs): void {
    this.#write('fatal', args);
  }
  error(...args: LogArgs): void {
    this.#write('error', args);
  }
  warn(...args: LogArgs): void {
    this.#write('warn', args);
  }
  info(...args: LogArgs): void {
    this.#write('info', args);
  }
  debug(...args: LogArgs): void {
    this.#write('debug', args);
  }
  trace(...args: LogArgs): void {
    this.#write('trace', args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: Record<string, unknown>): FastifyBaseLogger {
    return this.#real().child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: route options set no log level or serializers, so bindings suffice. */
export function lazyChildLogger(logger: FastifyBaseLogger, bindings: Bindings): FastifyBaseLogger {
  return new LazyChildLogger(logger, bindings) as unknown as FastifyBaseLogger;
}
