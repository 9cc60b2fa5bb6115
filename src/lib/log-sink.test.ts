import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { type LogDestination, LogSink } from './log-sink.ts';

class Recorder implements LogDestination {
  readonly writes: string[] = [];
  flushes = 0;
  syncFlushes = 0;
  write(chunk: string): boolean {
    this.writes.push(chunk);
    return true;
  }
  flush(cb?: (err?: Error | null) => void): void {
    this.flushes++;
    cb?.(null);
  }
  flushSync(): void {
    this.syncFlushes++;
  }
}

const line = (i: number) => `{"msg":"line ${i}"}\n`;

test('lines are handed on as one batch once it holds batchChars characters, in order', () => {
  const dest = new Recorder();
  const sink = new LogSink(dest, { batchChars: 60, maxDelayMs: 60_000 });
  for (let i = 0; i < 7; i++) sink.write(line(i));
  // Each line is 18 characters: the fourth reaches 72 >= 60, and so does the eighth (not written yet).
  assert.deepEqual(dest.writes, [line(0) + line(1) + line(2) + line(3)]);
  sink.flushSync();
  assert.deepEqual(dest.writes.slice(1), [line(4) + line(5) + line(6)]);
  assert.equal(dest.syncFlushes, 1);
});

test('a quiet sink hands its lines on maxDelayMs after the first, not later', async () => {
  const dest = new Recorder();
  const sink = new LogSink(dest, { batchChars: 4096, maxDelayMs: 30 });
  sink.write(line(1));
  await new Promise((r) => setTimeout(r, 10));
  sink.write(line(2));
  assert.deepEqual(dest.writes, []);
  await new Promise((r) => setTimeout(r, 40));
  assert.deepEqual(dest.writes, [line(1) + line(2)]);
  // Nothing pending: no empty write, and the timer does not come back by itself.
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(dest.writes.length, 1);
});

test('flush(cb) hands the batch on and asks the destination to write it', async () => {
  const dest = new Recorder();
  const sink = new LogSink(dest);
  sink.write(line(1));
  await new Promise<void>((resolve) => sink.flush(() => resolve()));
  assert.deepEqual(dest.writes, [line(1)]);
  assert.equal(dest.flushes, 1);
});

test("Rota's logger: every line reaches stdout when the process exits at once, none doubled", () => {
  const script = `
    import { createLogger } from ${JSON.stringify(new URL('./logger.ts', import.meta.url).href)};
    const log = createLogger('info');
    for (let i = 0; i < 500; i++) log.info({ i }, 'line');
    process.exit(0);
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.length, 500);
  const parsed = lines.map((l) => JSON.parse(l) as { i: number; time: string; service: string });
  assert.deepEqual(
    parsed.map((p) => p.i),
    Array.from({ length: 500 }, (_, i) => i),
  );
  assert.match(parsed[0]?.time ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.equal(parsed[0]?.service, 'rota');
});
