import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/**
 * A worker's side of `/metrics` with ROTA_WORKERS > 1: the instance's metrics are every worker's, so the
 * worker asks the primary, which gathers them all (primary.ts). Bounded: past 8 s the worker answers
 * with its own registry rather than hang a scrape.
 */
export const METRICS_REQUEST = 'rota:metrics';
export const METRICS_REPLY = 'rota:metrics:reply';

export type MetricsMessage = { type: string; id: number; text?: string } | undefined;

let seq = 0;

export function clusterRenderer(registry: Registry): () => Promise<string> {
  // prom-client answers the primary's collection from the registries named here; its worker-side
  // listener is installed by constructing an AggregatorRegistry (setRegistries alone installs none).
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries([registry]);
  return () =>
    new Promise((resolve) => {
      const id = ++seq;
      const done = (text: string) => {
        clearTimeout(timer);
        process.off('message', onMessage);
        resolve(text);
      };
      const onMessage = (m: MetricsMessage) => {
        if (m?.type === METRICS_REPLY && m.id === id) done(m.text || '');
      };
      const timer = setTimeout(() => void registry.metrics().then(done), 8_000);
      process.on('message', onMessage);
      process.send?.({ type: METRICS_REQUEST, id });
    });
}

export function isWorker(): boolean {
  return cluster.isWorker;
}
