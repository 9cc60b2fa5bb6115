import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import type { Dispatcher } from 'undici';
import { CallerGone, CLIENT_GONE } from '../lib/abort.ts';
import { ResponseBody } from './response-body.ts';
import { UpstreamError } from './types.ts';

/** The parts of undici's controller the body uses, recording what was asked of it. */
class FakeController {
  paused = false;
  aborted = false;
  reason: unknown = null;
  resumes = 0;
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
    this.resumes++;
  }
  abort(reason: unknown): void {
    this.aborted = true;
    this.reason = reason;
  }
}

/** A sink that takes `room` bytes before asking for a drain. */
class FakeSink extends EventEmitter {
  chunks: Buffer[] = [];
  ended = false;
  destroyed = false;
  private room: number;
  constructor(room = Number.POSITIVE_INFINITY) {
    super();
    this.room = room;
  }
  write(chunk: Buffer): boolean {
    this.chunks.push(chunk);
    this.room -= chunk.length;
    return this.room > 0;
  }
  end(): void {
    this.ended = true;
  }
  destroy(): void {
    this.destroyed = true;
  }
}

function setup(room?: number) {
  const c = new FakeController();
  const body = new ResponseBody(c as unknown as Dispatcher.DispatchController);
  const sink = new FakeSink(room);
  const done: number[] = [];
  // The door's signal: aborted when the client's response closes before it finished.
  const gone = new CallerGone();
  const leave = () => gone.abort(CLIENT_GONE);
  return { c, body, sink, done, leave, attach: () => body.pipeTo(sink, (n) => done.push(n), gone) };
}

describe('ResponseBody (an answer written straight into the client response)', () => {
  it('hands over chunks and the end that came before the sink, in order, and reports the bytes once', () => {
    const { body, sink, done, leave, attach } = setup();
    body.push(Buffer.from('ab'));
    body.push(Buffer.from('cd'));
    body.end();
    attach();
    assert.equal(Buffer.concat(sink.chunks).toString(), 'abcd');
    assert.ok(sink.ended);
    leave();
    assert.deepEqual(done, [4]);
  });

  it('pauses the proxy connection when too much waits for a sink, resumes once attached', () => {
    const { c, body, sink, attach } = setup();
    body.push(Buffer.alloc(40 * 1024));
    assert.equal(c.paused, false);
    body.push(Buffer.alloc(40 * 1024));
    assert.equal(c.paused, true, 'over 64 KiB held');
    attach();
    assert.equal(c.paused, false);
    assert.equal(sink.chunks.length, 2);
  });

  it('follows the sink: pauses when it is full, resumes on drain', () => {
    const { c, body, sink, attach } = setup(10);
    attach();
    body.push(Buffer.alloc(8));
    assert.equal(c.paused, false);
    body.push(Buffer.alloc(8));
    assert.equal(c.paused, true, 'the sink asked for a drain');
    sink.emit('drain');
    assert.equal(c.paused, false);
  });

  it('adds no listener to the sink until a write is refused, then one per refusal spell', () => {
    const small = setup();
    small.body.push(Buffer.from('{"ok":true}'));
    small.body.end();
    small.attach();
    assert.deepEqual(small.sink.eventNames(), [], 'a small answer leaves the response as it found it');
    const full = setup(4);
    full.attach();
    full.body.push(Buffer.alloc(8));
    full.body.push(Buffer.alloc(8));
    assert.equal(full.sink.listenerCount('drain'), 1, 'refused twice, waits for one drain');
    full.sink.emit('drain');
    assert.equal(full.sink.listenerCount('drain'), 0);
    full.body.push(Buffer.alloc(8));
    assert.equal(full.sink.listenerCount('drain'), 1);
    full.sink.emit('drain');
    assert.equal(full.c.paused, false);
  });

  it('a client that leaves before the end aborts the upstream request', () => {
    const { c, body, sink, done, leave, attach } = setup();
    attach();
    body.push(Buffer.from('x'));
    leave();
    assert.ok(c.aborted);
    assert.ok(c.reason instanceof UpstreamError && c.reason.kind === 'aborted');
    assert.deepEqual(done, [1]);
    body.push(Buffer.from('late'));
    assert.equal(sink.chunks.length, 1, 'nothing written after the abort');
  });

  it('a broken upstream cuts the client answer; an ended one is never aborted', () => {
    const broken = setup();
    broken.attach();
    broken.body.fail();
    assert.ok(broken.sink.destroyed);
    assert.deepEqual(broken.done, [0]);
    const whole = setup();
    whole.attach();
    whole.body.end();
    whole.body.destroy();
    assert.equal(whole.c.aborted, false);
  });

  it('destroyed before any sink (a discarded answer): the request is aborted, held chunks dropped', () => {
    const { c, body } = setup();
    body.push(Buffer.from('x'));
    body.destroy();
    assert.ok(c.aborted);
  });
});
