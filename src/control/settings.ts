import { type Config, STRATEGIES, type StrategyName } from '../config.ts';
import type { Rate } from '../lib/rate.ts';
import type { ProxyStore } from '../store/types.ts';

export interface RuntimeSettingsData {
  rotation_strategy: StrategyName;
  timeout: number;
  rate_limits: { default_limit: number; request_endpoint_limit: number };
  cors_origins: string[];
}

export type SettingsPatch = Partial<Omit<RuntimeSettingsData, 'rate_limits'>> & {
  rate_limits?: Partial<RuntimeSettingsData['rate_limits']> | undefined;
};

export type ConfigSource = 'environment' | 'storage';

/** What a rollback needs: the values served and the overrides stored. */
export interface SettingsState {
  readonly current: Readonly<RuntimeSettingsData>;
  readonly overrides: Readonly<SettingsPatch>;
}

const STORAGE_KEY = 'runtime_settings';

/**
 * The values `PUT config` may change. Readers always get the current object; writers replace it whole,
 * so a request never sees a half-applied update.
 *
 * Only the fields a `PUT config` set are stored (the overrides), not the whole set: a field nobody
 * changed at runtime keeps following its environment variable across restarts.
 */
export class RuntimeSettings {
  private readonly base: Readonly<RuntimeSettingsData>;
  private overrides: Readonly<SettingsPatch> = {};
  private current: Readonly<RuntimeSettingsData>;
  private sourceValue: ConfigSource = 'environment';
  private readonly store: ProxyStore;
  private readonly listeners: (() => void)[] = [];
  readonly rateWindowMs: number;

  constructor(config: Config, store: ProxyStore) {
    this.store = store;
    this.rateWindowMs = config.rateLimit.windowMs;
    this.base = Object.freeze({
      rotation_strategy: config.strategy,
      timeout: config.timeoutS,
      rate_limits: {
        default_limit: config.rateLimit.limit,
        request_endpoint_limit: config.routeRateLimits.request.limit,
      },
      cors_origins: [...config.corsOrigins],
    });
    this.current = this.base;
  }

  /** Applies what an earlier `PUT config` stored. A stored value that is no longer valid is ignored. */
  async load(): Promise<void> {
    const saved = await this.store.getSetting(STORAGE_KEY);
    if (!isRecord(saved)) return;
    this.overrides = sanitize(saved);
    this.current = merged(this.base, this.overrides);
    this.sourceValue = 'storage';
  }

  /** Marks the configuration as coming from storage (the retry policy was loaded from there). */
  markStored(): void {
    this.sourceValue = 'storage';
  }

  get(): Readonly<RuntimeSettingsData> {
    return this.current;
  }

  get source(): ConfigSource {
    return this.sourceValue;
  }

  defaultRate(): Rate {
    return { limit: this.current.rate_limits.default_limit, windowMs: this.rateWindowMs };
  }

  state(): SettingsState {
    return { current: this.current, overrides: this.overrides };
  }

  /** Persists first, then swaps, so that what is served is always what a restart would load. */
  async update(patch: SettingsPatch): Promise<Readonly<RuntimeSettingsData>> {
    const overrides = combine(this.overrides, patch);
    const next = merged(this.base, overrides);
    await this.store.putSetting(STORAGE_KEY, overrides);
    this.overrides = overrides;
    this.current = next;
    if (this.store.backend !== 'memory') this.sourceValue = 'storage';
    for (const l of this.listeners) l();
    return next;
  }

  /** Told after every update or restore made here (shared state tells the other instances). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Puts back an earlier state (an update whose companion write failed is undone with this). */
  async restore(s: SettingsState): Promise<void> {
    await this.store.putSetting(STORAGE_KEY, s.overrides);
    this.overrides = s.overrides;
    this.current = s.current;
    for (const l of this.listeners) l();
  }
}

function combine(a: Readonly<SettingsPatch>, b: SettingsPatch): Readonly<SettingsPatch> {
  const out: SettingsPatch = { ...a };
  if (b.rotation_strategy !== undefined) out.rotation_strategy = b.rotation_strategy;
  if (b.timeout !== undefined) out.timeout = b.timeout;
  if (b.cors_origins !== undefined) out.cors_origins = [...b.cors_origins];
  if (b.rate_limits !== undefined) out.rate_limits = { ...a.rate_limits, ...b.rate_limits };
  return Object.freeze(out);
}

function merged(
  base: Readonly<RuntimeSettingsData>,
  o: Readonly<SettingsPatch>,
): Readonly<RuntimeSettingsData> {
  return Object.freeze({
    rotation_strategy: o.rotation_strategy ?? base.rotation_strategy,
    timeout: o.timeout ?? base.timeout,
    rate_limits: { ...base.rate_limits, ...o.rate_limits },
    cors_origins: o.cors_origins ? [...o.cors_origins] : [...base.cors_origins],
  });
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

const isLimit = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 1;

/** Keeps the stored fields that still hold valid values (a database from another version may not). */
function sanitize(saved: Record<string, unknown>): Readonly<SettingsPatch> {
  const out: SettingsPatch = {};
  const s = saved.rotation_strategy;
  if (typeof s === 'string' && (STRATEGIES as readonly string[]).includes(s)) {
    out.rotation_strategy = s as StrategyName;
  }
  const t = saved.timeout;
  if (Number.isInteger(t) && (t as number) >= 1 && (t as number) <= 300) out.timeout = t as number;
  const o = saved.cors_origins;
  if (Array.isArray(o) && o.every((x) => typeof x === 'string')) out.cors_origins = o as string[];
  if (isRecord(saved.rate_limits)) {
    const { default_limit: d, request_endpoint_limit: r } = saved.rate_limits;
    const limits: SettingsPatch['rate_limits'] = {};
    if (isLimit(d)) limits.default_limit = d;
    if (isLimit(r)) limits.request_endpoint_limit = r;
    if (Object.keys(limits).length > 0) out.rate_limits = limits;
  }
  return Object.freeze(out);
}
