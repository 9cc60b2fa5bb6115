import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { type Browser, chromium } from 'playwright-core';
import { startServer } from './server.ts';

export interface RunningRota {
  readonly base: string;
  readonly port: number;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  stop(): Promise<void>;
}

/** Starts `node src/main.ts` as `npm start` does (see helpers/server.ts) and waits until it is ready. */
export async function spawnRota(env: Record<string, string>): Promise<RunningRota> {
  const s = await startServer(env);
  return {
    base: s.url,
    port: s.port,
    output: () => s.output(),
    stop: async () => {
      await s.stop();
    },
  };
}

export interface TrapProxy {
  /** `http://127.0.0.1:<port>`, for the browser's proxy setting. */
  readonly server: string;
  /** First request line of every connection the browser tried to make off loopback. */
  readonly attempts: string[];
  close(): Promise<void>;
}

/**
 * A proxy that forwards nothing. Pointing the browser at it (loopback bypasses proxies) makes every
 * request for anywhere else, including the browser's own background traffic and DNS-by-proxy, land
 * here, where it is recorded and refused.
 */
export async function startTrapProxy(): Promise<TrapProxy> {
  const attempts: string[] = [];
  const open = new Set<Socket>();
  const srv: Server = createServer((sock) => {
    open.add(sock);
    sock.on('close', () => open.delete(sock));
    sock.once('data', (chunk: Buffer) => {
      attempts.push(chunk.toString('latin1').split('\r\n', 1)[0] ?? '');
      sock.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    });
    sock.on('error', () => {});
  });
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const addr = srv.address();
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  return {
    server: `http://127.0.0.1:${addr.port}`,
    attempts,
    close: async () => {
      for (const sock of open) sock.destroy();
      srv.close();
      await once(srv, 'close');
    },
  };
}

/**
 * Playwright's own list of disabled features (it keeps Chromium quiet on start-up) plus autofill's
 * server queries. A second --disable-features replaces the first, so the whole list is given here; every
 * browser test launches with it.
 */
export const DISABLED_FEATURES = [
  'AvoidUnnecessaryBeforeUnloadCheckSync',
  'DestroyProfileOnBrowserClose',
  'HttpsUpgrades',
  'HttpsFirstBalancedModeAutoEnable',
  'LensOverlay',
  'MediaRouter',
  'PaintHolding',
  'ThirdPartyStoragePartitioning',
  'OptimizationHints',
  'NetworkTimeServiceQuerying',
  'AimEnabled',
  'PreconnectToSearch',
  'AutofillServerCommunication',
].join(',');

/** Debian's Chromium, which scripts/system-deps.sh installs. */
export const CHROMIUM = '/usr/bin/chromium';
/** The `skip` of every browser test: false, or why Chromium is not there. */
export const CHROMIUM_MISSING: string | false = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is missing: scripts/system-deps.sh installs Debian's chromium`;

/**
 * Headless Chromium as every browser test runs it: quiet on start-up, and with `proxyServer` (a trap
 * proxy, or Rota itself) as its proxy, so that nothing it does leaves the machine. `extraArgs` are
 * added to the command line (e.g. `--host-resolver-rules`).
 */
export function launchChromium(proxyServer: string, extraArgs: readonly string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--disable-features=${DISABLED_FEATURES}`,
      `--proxy-server=${proxyServer}`,
      ...extraArgs,
    ],
  });
}
