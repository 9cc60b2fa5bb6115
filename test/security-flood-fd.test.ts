import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { parseFdLimit } from '../src/lib/fd-limit.ts';
import { closeAll, type Idle, openIdle, waitUntil } from './helpers/flood.ts';
import { Doors, startTarget, type Target } from './helpers/flood-doors.ts';
import { freePort, type RealProxy, startAllOrClose, startTinyproxy } from './helpers/real-proxies.ts';
import { type RunningServer, startServer } from './helpers/server.ts';

/*
 * Rota under a real open-file limit (prlimit): Node's raise of the soft limit to the hard one at start,
 * and an idle-connection flood of nearly twice the process's descriptors.
 */

interface Limited {
  readonly tiny: RealProxy;
  readonly target: Target;
  readonly rota: RunningServer;
  readonly doors: Doors;
  close(): Promise<void>;
}

/** Rota under `prlimit --nofile=256:256`, with tinyproxy in its pool and a loopback target. */
async function startLimited(env: Readonly<Record<string, string>> = {}): Promise<Limited> {
  const [tiny, target] = await startAllOrClose<[RealProxy, Target]>([startTinyproxy(), startTarget()]);
  const [httpPort, socksPort] = [await freePort(), await freePort()];
  const rota = await startServer(
    {
      ROTA_PROXY_PORT: String(httpPort),
      ROTA_SOCKS_PORT: String(socksPort),
      ROTA_SSRF_ALLOW: '127.0.0.0/8',
      ROTA_HEDGE_DELAY_S: '0',
      ROTA_LOG_LEVEL: 'info',
      ...env,
    },
    { prefix: ['prlimit', `--nofile=${FDS}:${FDS}`, '--'] },
  ).catch(async (err: unknown) => {
    await tiny.close();
    await target.close();
    throw err;
  });
  const doors = new Doors(rota.port, httpPort, socksPort, target);
  const close = async () => {
    await rota.stop();
    await tiny.close();
    await target.close();
  };
  const res = await fetch(`${rota.url}/api/v1/proxies`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url: `http://127.0.0.1:${tiny.port}` }),
  });
  assert.equal(res.status, 201, await res.text());
  doors.baselineApi = (await doors.held('127.0.0.2')).api;
  return { tiny, target, rota, doors, close };
}

const FDS = 256;

/** 8 addresses × 60 idle connections, half to each listener: nearly twice the process's descriptors. */
async function floodListeners(doors: Doors, into: Idle[]): Promise<void> {
  for (let i = 0; i < 8; i++) {
    into.push(...(await openIdle(i % 2 === 0 ? doors.http : doors.socks, `127.0.0.${41 + i}`, 60)));
  }
}

describe(`a flood past a real open-file limit (${FDS})`, () => {
  let s: Limited | undefined;
  const flood: Idle[] = [];
  after(async () => {
    closeAll(flood);
    await s?.close();
  });

  it('with the default cap: /health, /metrics and the upstreams keep working, no breaker opens', async () => {
    s = await startLimited();
    const { rota, doors } = s;
    await waitUntil(() => rota.output().includes('connection limits'), 5_000, 'the start-up line');
    assert.match(rota.output(), /"open_files_soft":256,"open_files_hard":256,"max_connections":128/);
    await floodListeners(doors, flood);
    const h = await doors.held('127.0.0.60');
    assert.equal(h.http + h.socks5 + h.api - 1, FDS / 2, JSON.stringify(h));
    // Refused connections that sent nothing are closed within half a second.
    const held = h.http + h.socks5;
    await waitUntil(() => flood.filter((i) => !i.closed).length === held, 10_000, 'refusals closed');
    assert.equal(await doors.health('127.0.0.60'), 200);
    const during = await doors.proxied('127.0.0.60');
    assert.deepEqual([during.status, during.error], [503, 'TOO_MANY_CONNECTIONS'], 'refused, not a 502');
    assert.doesNotMatch(rota.output(), /EMFILE/);

    closeAll(flood.splice(0));
    await doors.assertAsBefore('127.0.0.60', '127.0.0.41');
    await s.close();
    s = undefined;
  });

  it('with the cap set past the limit: Rota lives through EMFILE, blames no proxy, and recovers', async () => {
    s = await startLimited({ ROTA_MAX_CONNECTIONS: '1000' });
    const { doors, target } = s;
    // Admitted while descriptors are left; they ask once there are none.
    const probes = await openIdle(doors.http, '127.0.0.70', 10);
    await waitUntil(async () => (await doors.held('127.0.0.2')).http === 10, 10_000, 'probes taken');
    await floodListeners(doors, flood);
    for (const p of probes) {
      p.socket.write(
        `GET http://127.0.0.1:${target.port}/x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
      );
    }
    await waitUntil(() => probes.every((p) => p.closed), 15_000, 'every probe answered');
    const statuses = probes.map((p) => /^HTTP\/1\.1 (\d{3})/.exec(p.received)?.[1] ?? 'closed');
    assert.ok(
      statuses.some((st) => st !== '200'),
      `the descriptors ran out: ${statuses.join()}`,
    );
    // Out of descriptors is Rota's own shortage: never a 502 blaming the proxy (classify.ts).
    assert.ok(!statuses.includes('502'), statuses.join());

    closeAll(flood.splice(0));
    await doors.assertAsBefore('127.0.0.60', '127.0.0.41');
  });
});

describe('the open-file limit at start', () => {
  it('Node raises the soft limit to the hard one, and Rota logs it', async () => {
    const rota = await startServer(
      { ROTA_LOG_LEVEL: 'info' },
      { prefix: ['prlimit', '--nofile=1024:4096', '--'] },
    );
    try {
      const limits = parseFdLimit(readFileSync(`/proc/${rota.proc.pid}/limits`, 'utf8'));
      assert.deepEqual(limits, { soft: 4096, hard: 4096 });
      await waitUntil(() => rota.output().includes('connection limits'), 5_000, 'the start-up line');
      assert.match(rota.output(), /"open_files_soft":4096,"open_files_hard":4096,"max_connections":2048/);
    } finally {
      await rota.stop();
    }
  });
});
