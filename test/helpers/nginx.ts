import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canConnect, freePort } from './real-proxies.ts';

/**
 * Debian's nginx as the load balancer in front of several Rota instances: round-robin over their API
 * ports, on a free loopback port, everything in a temp folder. The sample config for operators is
 * deploy/nginx.conf; this one is the same shape with test ports.
 */
export interface TestNginx {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

const BIN = '/usr/sbin/nginx';

export async function startNginx(upstreams: readonly number[]): Promise<TestNginx> {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: install nginx (scripts/system-deps.sh)`);
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), 'rota-nginx-'));
  await mkdir(join(dir, 'logs'));
  const conf = [
    'worker_processes 1;',
    'daemon off;',
    `pid ${join(dir, 'nginx.pid')};`,
    `error_log ${join(dir, 'logs', 'error.log')} warn;`,
    'events { worker_connections 1024; }',
    'http {',
    '  access_log off;',
    `  client_body_temp_path ${join(dir, 'body')};`,
    `  proxy_temp_path ${join(dir, 'proxy')};`,
    `  upstream rota { ${upstreams.map((p) => `server 127.0.0.1:${p};`).join(' ')} keepalive 32; }`,
    `  server { listen 127.0.0.1:${port};`,
    '    location / { proxy_pass http://rota; proxy_http_version 1.1; proxy_set_header Connection "";',
    // The client's Host goes on to Rota (which listens on loopback and answers only loopback names).
    '      proxy_set_header Host $http_host;',
    '      proxy_set_header X-Forwarded-For $remote_addr; } }',
    '}',
  ].join('\n');
  const file = join(dir, 'nginx.conf');
  await writeFile(file, conf);
  const child: ChildProcess = spawn(BIN, ['-p', dir, '-c', file], { stdio: 'ignore' });
  const until = Date.now() + 10_000;
  while (!(await canConnect(port))) {
    if (Date.now() > until || child.exitCode !== null) throw new Error('nginx did not start');
    await new Promise((r) => setTimeout(r, 30));
  }
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      if (child.exitCode === null) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGQUIT');
        await gone;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
