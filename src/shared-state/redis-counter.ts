import type { Count, RateCounter } from '../lib/rate-counter.ts';
import { MemoryRateCounter } from '../lib/rate-counter.ts';
import type { RedisLink } from './redis-link.ts';

/** INCR, start the window on the first hit, and its time left: one round trip per check. */
const INCR = `local c = redis.call('INCR', KEYS[1])
if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local t = redis.call('PTTL', KEYS[1])
if t < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); t = tonumber(ARGV[1]) end
return {c, t}`;

const PEEK = `local c = redis.call('GET', KEYS[1])
if not c then return {0, 0} end
return {tonumber(c), redis.call('PTTL', KEYS[1])}`;

/**
 * One limit per key or IP across every instance: the counters live in Redis. While Redis cannot be
 * reached, the in-process counter takes over (each instance then limits on its own: more lenient, never
 * a failed request), and Redis is used again as soon as it is back.
 */
export class RedisRateCounter implements RateCounter {
  readonly #link: RedisLink;
  readonly #local = new MemoryRateCounter();
  readonly #prefix: string;

  constructor(link: RedisLink, prefix = 'rota:rl:') {
    this.#link = link;
    this.#prefix = prefix;
  }

  incr(key: string, windowMs: number): Count | Promise<Count> {
    if (!this.#link.up) return this.#local.incr(key, windowMs);
    return this.#eval(INCR, key, windowMs).catch(() => this.#local.incr(key, windowMs));
  }

  peek(key: string, windowMs: number): Count | Promise<Count> {
    if (!this.#link.up) return this.#local.peek(key, windowMs);
    return this.#eval(PEEK, key, windowMs).catch(() => this.#local.peek(key, windowMs));
  }

  async #eval(script: string, key: string, windowMs: number): Promise<Count> {
    const r = (await this.#link.cmd.eval(script, 1, this.#prefix + key, String(Math.ceil(windowMs)))) as [
      number,
      number,
    ];
    return { count: Number(r[0]), ttlMs: Math.max(0, Number(r[1])) };
  }
}
