import { Gauge, type Registry } from 'prom-client';

/**
 * prom-client's default metrics name three gauges `*_total` (the active libuv handles, requests and
 * resources in all), which `promtool check metrics` refuses: `_total` is for counters. They are
 * replaced by the same gauges under names that follow the rules (docs/decisions.md, "Metric names"):
 *
 *   rota_nodejs_active_handles_total   → rota_nodejs_handles_active
 *   rota_nodejs_active_requests_total  → rota_nodejs_requests_active
 *   rota_nodejs_active_resources_total → rota_nodejs_resources_active
 *
 * The per-type gauges (rota_nodejs_active_handles{type}, ...) stay as prom-client names them.
 */
interface NodeInternals {
  _getActiveHandles?: () => unknown[];
  _getActiveRequests?: () => unknown[];
  getActiveResourcesInfo?: () => string[];
}

const RENAMED: readonly { from: string; to: string; help: string; count: () => number | null }[] = [
  {
    from: 'rota_nodejs_active_handles_total',
    to: 'rota_nodejs_handles_active',
    help: 'Active libuv handles, all types together',
    count: () => (process as NodeInternals)._getActiveHandles?.().length ?? null,
  },
  {
    from: 'rota_nodejs_active_requests_total',
    to: 'rota_nodejs_requests_active',
    help: 'Active libuv requests, all types together',
    count: () => (process as NodeInternals)._getActiveRequests?.().length ?? null,
  },
  {
    from: 'rota_nodejs_active_resources_total',
    to: 'rota_nodejs_resources_active',
    help: 'Active resources keeping the event loop alive, all types together',
    count: () => (process as NodeInternals).getActiveResourcesInfo?.().length ?? null,
  },
];

/** Call after collectDefaultMetrics({ prefix: 'rota_' }) on `registry`. */
export function renameProcessTotals(registry: Registry): void {
  for (const r of RENAMED) {
    if (registry.getSingleMetric(r.from) === undefined) continue;
    registry.removeSingleMetric(r.from);
    new Gauge({
      name: r.to,
      help: r.help,
      registers: [registry],
      collect() {
        const n = r.count();
        if (n !== null) this.set(n);
      },
    });
  }
}
