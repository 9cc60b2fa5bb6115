import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';

/**
 * Route schemas compiled on first use instead of at start-up.
 *
 * Why: Fastify compiles every route's validators (Ajv) and response serializers (fast-json-stringify)
 * while it boots. For Rota's ~60 routes and their error answers that was about 250 ms of the start-up
 * CPU (a --cpu-prof of `dist/main.js` to the first /ready: fast-json-stringify ~130 ms, Ajv ~90 ms) and
 * their compiled code stayed in the heap even for routes nobody calls. Compiled lazily, a route pays its
 * compilation once, on its first request (a few ms).
 *
 * A schema mistake would then surface on first use rather than at boot, so every lazy compiler is also
 * kept in a list that `compileAllSchemas` runs: the tests call it on the full app, so a schema that
 * does not compile still fails `npm test`.
 */
type Compile<F> = () => F;
type AnyFn = (...args: never[]) => unknown;

const attached = new WeakMap<object, LazySchemas>();

/** A validator that compiles on its first call; Fastify reads `.errors` after a call, so it is mirrored. */
function lazyValidator<F extends AnyFn & { errors?: unknown }>(compile: Compile<F>, list: (() => void)[]) {
  let real: F | undefined;
  const force = (): F => {
    real ??= compile();
    return real;
  };
  list.push(() => void force());
  const validate = (...args: Parameters<F>): unknown => {
    const f = force();
    const out = f(...args);
    validate.errors = f.errors;
    return out;
  };
  validate.errors = undefined as unknown;
  return validate;
}

function lazySerializer(compile: Compile<(data: unknown) => string>, list: (() => void)[]) {
  let real: ((data: unknown) => string) | undefined;
  const force = () => {
    real ??= compile();
    return real;
  };
  list.push(() => void force());
  return (data: unknown): string => force()(data);
}

/** One app's lazy compilers: made before Fastify() (its options need them), attached to the app after. */
export class LazySchemas {
  readonly #list: (() => void)[] = [];

  /** Fastify's `schemaController` option: fast-json-stringify serializers, compiled on first use. */
  schemaController(): FastifyServerOptions['schemaController'] {
    const eager = SerializerSelector();
    const list = this.#list;
    return {
      compilersFactory: {
        buildSerializer: (externalSchemas: unknown, options: unknown) => {
          const compile = eager(externalSchemas as never, options as never);
          return (route: Parameters<typeof compile>[0]) => lazySerializer(() => compile(route), list);
        },
      },
    };
  }

  /** Wraps a validator compiler so that each route's validator is compiled on its first use. */
  validatorCompiler<R, F extends AnyFn & { errors?: unknown }>(compile: (route: R) => F): (route: R) => F {
    const list = this.#list;
    // The stand-in has F's call signature and mirrors its `errors`: it is an F to its caller.
    return (route: R) => lazyValidator(() => compile(route), list) as unknown as F;
  }

  attach(app: FastifyInstance): void {
    attached.set(app, this);
  }

  compileAll(): number {
    for (const f of this.#list) f();
    return this.#list.length;
  }
}

/** Compiles every schema the app has registered (the tests); how many compilers there were. */
export function compileAllSchemas(app: FastifyInstance): number {
  return attached.get(app)?.compileAll() ?? 0;
}
