import type { Redis } from 'ioredis';

/**
 * Provider-session generations (outbound/gateways.ts) kept in Redis beside their notices, one key each
 * (`rota:gen:<session key>\n<gateway id>`, a day from its last move): an instance that starts, or comes
 * back after Redis was gone, reads them (Replicator.resync) and renders the provider sessions the others
 * render, rather than generation 0, whose exit a site may have banned.
 *
 *   bump here ──▶ notice (the others now) + persistGeneration (the later ones) ──▶ resync: readGenerations
 */

const PREFIX = 'rota:gen:';
const TTL_S = 86_400;
/** Kept at most what ProviderSessions holds (outbound/gateways.ts MAX_GENERATIONS). */
const MAX_READ = 100_000;

/** Sets the generation unless a later one is there (an instance that missed moves must not undo them). */
const MAX_SET = `
local c = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > c then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
else
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end
return 1`;

/** The script as a command of the connection (ioredis defineCommand: EVALSHA, the text sent once). */
interface WithGenerations {
  rotaGenerationMax(key: string, gen: number, ttlS: number): Promise<unknown>;
}

export function defineGenerationCommand(cmd: Redis): void {
  cmd.defineCommand('rotaGenerationMax', { numberOfKeys: 1, lua: MAX_SET });
}

/** Needs defineGenerationCommand(cmd) first. */
export function persistGeneration(cmd: Redis, key: string, gen: number): void {
  // defineCommand adds the method at run time; ioredis's types cannot know its name.
  (cmd as unknown as WithGenerations).rotaGenerationMax(PREFIX + key, gen, TTL_S).catch(() => {});
}

/** Every generation kept (up to MAX_READ), by key; read in pages, never one command over them all. */
export async function readGenerations(cmd: Redis): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  let cursor = '0';
  do {
    const [next, keys] = await cmd.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) {
      const values = await cmd.mget(...keys);
      keys.forEach((k, i) => {
        const gen = Number(values[i]);
        if (Number.isSafeInteger(gen) && gen > 0) out.set(k.slice(PREFIX.length), gen);
      });
    }
  } while (cursor !== '0' && out.size < MAX_READ);
  return out;
}
