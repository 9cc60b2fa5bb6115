/*
 * ROTA_WORKERS=N: N worker processes on the same ports (node:cluster), one primary that only supervises.
 *
 *   primary ──fork──▶ worker 1 … worker N      each a whole Rota (API + listeners), the same shared state
 *      │                 ▲   (Redis) and pool (SQLite or PostgreSQL); the kernel spreads connections
 *      ├─ restarts a worker that dies (not during a stop)
 *      ├─ SIGTERM/SIGINT: passes it on, waits for every worker (each has its own 15 s bound), exits 0
 *      └─ /metrics of any worker: the primary gathers every worker's registry (prom-client's
 *         AggregatorRegistry) and hands the sum back (metrics-ipc.ts)
 */
import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, type PrometheusContentType } from 'prom-client';
import type { Config } from '../config.ts';
import { METRICS_REPLY, METRICS_REQUEST, type MetricsMessage } from './metrics-ipc.ts';

const RESTART_DELAY_MS = 500;

export function runPrimary(config: Config, log: (line: string) => void): void {
  const aggregator = new AggregatorRegistry<PrometheusContentType>();
  let stopping = false;
  const fork = () => {
    const w = cluster.fork();
    w.on('message', (m: MetricsMessage) => void answerMetrics(w, m, aggregator));
  };
  for (let i = 0; i < config.workers; i++) fork();
  cluster.on('exit', (w, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    log(`worker ${w.process.pid} exited (${signal ?? code}); starting another`);
    setTimeout(fork, RESTART_DELAY_MS).unref();
  });
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    if (workers.length === 0) process.exit(0);
    for (const w of workers) w.process.kill(signal);
    setTimeout(() => process.exit(1), 20_000).unref();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function answerMetrics(
  w: Worker,
  m: MetricsMessage,
  aggregator: AggregatorRegistry<PrometheusContentType>,
): Promise<void> {
  if (m?.type !== METRICS_REQUEST) return;
  let text = '';
  try {
    text = await aggregator.clusterMetrics();
  } catch {
    text = '';
  }
  if (w.isConnected()) w.send({ type: METRICS_REPLY, id: m.id, text });
}
