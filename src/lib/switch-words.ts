/**
 * The words a ROTA_* switch accepts, case-insensitive: one list for the config reader (config-reader.ts)
 * and for the switches read before the config is (node-flags.ts, compile-cache.ts), which must not load
 * the config's modules ahead of the flags' re-exec.
 */
const ON = new Set(['1', 'true', 'yes', 'on']);
const OFF = new Set(['0', 'false', 'no', 'off']);

/** `on` or `off` for a switch word (surrounding blanks ignored), null for anything else. */
export function switchWord(v: string): 'on' | 'off' | null {
  const w = v.trim().toLowerCase();
  return ON.has(w) ? 'on' : OFF.has(w) ? 'off' : null;
}
