import type { Redis } from 'ioredis';
import type { Count, RateCounter, Taken } from '../lib/rate-counter.ts';
import { MemoryRateCounter } from '../lib/rate-counter.ts';
import type { RedisLink } from './redis-link.ts';

/** INCR, start the window on the first hit, and its time left: one round trip per check. */
const INCR_LUA = `local c = redis.call('INCR', KEYS[1])
if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local t = redis.call('PTTL', KEYS[1])
if t < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); t = tonumber(ARGV[1]) end
return {c, t}`;

const PEEK_LUA = `local c = redis.call('GET', KEYS[1])
if not c then return {0, 0} end
return {tonumber(c), redis.call('PTTL', KEYS[1])}`;

/**
 * Check and count as one step (Redis runs a script alone): refuse when the count is at the limit
 * (ARGV[2]), else count ARGV[3] (0 or 1) and start the window on the first hit. Returns
 * {1 under | 0 over, count, ttl}. A key left without an expiry gets the window again, as in INCR_LUA.
 */
const TAKE_LUA = `local c = tonumber(redis.call('GET', KEYS[1]) or '0')
local over = c >= tonumber(ARGV[2])
if not over and ARGV[3] == '1' then
  c = redis.call('INCR', KEYS[1])
  if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
end
if c == 0 then return {1, 0, tonumber(ARGV[1])} end
local t = redis.call('PTTL', KEYS[1])
if t < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); t = tonumber(ARGV[1]) end
if over then return {0, c, t} end
return {1, c, t}`;

/**
 * The scripts as commands of the connection (ioredis defineCommand): ioredis sends EVAL the first
 * time on a socket and EVALSHA (the 40-byte hash instead of the ~230-byte body) after that, and goes back
 * to EVAL by itself when Redis answers NOSCRIPT (a restart, SCRIPT FLUSH). Every API request makes one
 * such call: by hash it took 9.0 instead of 11.9 µs of Rota's CPU (ioredis against redis-server, 50 calls
 * in flight), and spared Redis a SHA-1 of the body per call.
 */
interface CounterScripts {
  rotaRateIncr(key: string, windowMs: string): Promise<unknown>;
  rotaRatePeek(key: string, windowMs: string): Promise<unknown>;
  rotaRateTake(key: string, windowMs: string, limit: string, cost: string): Promise<unknown>;
}
type Script = 'rotaRateIncr' | 'rotaRatePeek';

function withScripts(cmd: Redis): CounterScripts {
  cmd.defineCommand('rotaRateIncr', { numberOfKeys: 1, lua: INCR_LUA });
  cmd.defineCommand('rotaRatePeek', { numberOfKeys: 1, lua: PEEK_LUA });
  cmd.defineCommand('rotaRateTake', { numberOfKeys: 1, lua: TAKE_LUA });
  // defineCommand adds the methods at run time; ioredis's types cannot know their names.
  return cmd as unknown as CounterScripts;
}

/**
 * One limit per key or IP across every instance: the counters live in Redis. While Redis cannot be
 * reached, the in-process counter takes over (each instance then limits on its own: more lenient, never
 * a failed request), and Redis is used again as soon as it is back.
 */
export class RedisRateCounter implements RateCounter {
  readonly #link: RedisLink;
  readonly #local = new MemoryRateCounter();
  readonly #prefix: string;
  readonly #scripts: CounterScripts;

  constructor(link: RedisLink, prefix = 'rota:rl:') {
    this.#link = link;
    this.#prefix = prefix;
    this.#scripts = withScripts(link.cmd);
  }

  incr(key: string, windowMs: number): Count | Promise<Count> {
    if (!this.#link.up) return this.#local.incr(key, windowMs);
    return this.#eval('rotaRateIncr', key, windowMs).catch(() => this.#local.incr(key, windowMs));
  }

  peek(key: string, windowMs: number): Count | Promise<Count> {
    if (!this.#link.up) return this.#local.peek(key, windowMs);
    return this.#eval('rotaRatePeek', key, windowMs).catch(() => this.#local.peek(key, windowMs));
  }

  take(key: string, limit: number, windowMs: number, cost: 0 | 1): Taken | Promise<Taken> {
    if (!this.#link.up) return this.#local.take(key, limit, windowMs, cost);
    return this.#take(key, limit, windowMs, cost).catch(() => this.#local.take(key, limit, windowMs, cost));
  }

  async #take(key: string, limit: number, windowMs: number, cost: 0 | 1): Promise<Taken> {
    const window = String(Math.ceil(windowMs));
    const r = (await this.#scripts.rotaRateTake(this.#prefix + key, window, String(limit), String(cost))) as [
      number,
      number,
      number,
    ];
    const count = Number(r[1]);
    const ttlMs = Math.max(0, Number(r[2]));
    return Number(r[0]) === 1 ? { type: 'under', count, ttlMs } : { type: 'over', count, ttlMs };
  }

  async #eval(script: Script, key: string, windowMs: number): Promise<Count> {
    const r = (await this.#scripts[script](this.#prefix + key, String(Math.ceil(windowMs)))) as [
      number,
      number,
    ];
    return { count: Number(r[0]), ttlMs: Math.max(0, Number(r[1])) };
  }
}
