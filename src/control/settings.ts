import type { Config, StrategyName } from '../config.ts';
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

const STORAGE_KEY = 'runtime_settings';

/**
 * The values `PUT config` may change. Readers always get the current object; writers replace it whole,
 * so a request never sees a half-applied update.
 */
export class RuntimeSettings {
  private current: Readonly<RuntimeSettingsData>;
  private sourceValue: ConfigSource = 'environment';
  private readonly store: ProxyStore;
  readonly rateWindowMs: number;
  readonly requestWindowMs: number;

  constructor(config: Config, store: ProxyStore) {
    this.store = store;
    this.rateWindowMs = config.rateLimit.windowMs;
    this.requestWindowMs = config.routeRateLimits.request.windowMs;
    this.current = Object.freeze({
      rotation_strategy: config.strategy,
      timeout: config.timeoutS,
      rate_limits: {
        default_limit: config.rateLimit.limit,
        request_endpoint_limit: config.routeRateLimits.request.limit,
      },
      cors_origins: [...config.corsOrigins],
    });
  }

  /** Applies what an earlier `PUT config` persisted. */
  async load(): Promise<void> {
    const saved = (await this.store.getSetting(STORAGE_KEY)) as Partial<RuntimeSettingsData> | null;
    if (saved && typeof saved === 'object') {
      this.current = Object.freeze({ ...this.current, ...saved });
      this.sourceValue = 'storage';
    }
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

  /** Persists first, then swaps, so that what is served is always what a restart would load. */
  async update(patch: SettingsPatch): Promise<Readonly<RuntimeSettingsData>> {
    const next = Object.freeze({
      ...this.current,
      ...patch,
      rate_limits: { ...this.current.rate_limits, ...(patch.rate_limits ?? {}) },
    });
    await this.store.putSetting(STORAGE_KEY, next);
    this.current = next;
    this.sourceValue = this.store.backend === 'memory' ? this.sourceValue : 'storage';
    return next;
  }
}
