/**
 * The safe label of a pool entry: what tells apart entries that share an address and differ by username,
 * shown in the API, the CLI and the dashboard. Never a password, never a rendered gateway username.
 *
 *   1. the operator's `label`, when set;
 *   2. else the non-secret part of the username template or of the username: its words (split on `-`, `_`,
 *      `.`, `:`, `+`) up to the first that names a session, a password or a key (`session`, `sessid`,
 *      `sesstime`, `pass`, `token`...), looks like a generated id (8 or more letters and digits, with
 *      both), or holds a template placeholder (`{session}`); at most 64 characters. That is a provider's
 *      account-and-zone prefix, the same for all of one account's entries, never the part that varies;
 *   3. a plain username (no such word: a bare account name, which the API never showed) only by its
 *      first two characters and `…`, enough to tell `alice` from `bob` without showing either;
 *   4. else null (no username).
 *
 * `customer-acme-zone-res-session-abc123-country-de` → `customer-acme-zone-res`,
 * `user-acme-sessid-{session}` (template) → `user-acme`, `alice` → `al…`.
 */
import type { ProxyRecord } from './types.ts';

const MAX_LABEL = 64;
const SECRET_WORDS = new Set([
  'session',
  'sessid',
  'sessionid',
  'sess',
  'sesstime',
  'sessionduration',
  'lifetime',
  'pass',
  'passwd',
  'password',
  'pwd',
  'token',
  'key',
  'secret',
  'rand',
]);
const GENERATED = /^(?=[a-z0-9]*\d)(?=[a-z0-9]*[a-z])[a-z0-9]{8,}$/i;

/** The words of `name` kept before the first secret-looking one (see above), or its first two characters. */
export function safeUsernamePart(name: string): string | null {
  let end = 0;
  let cut = false;
  const word = /[^-_.:+]+/g;
  for (let m = word.exec(name); m !== null; m = word.exec(name)) {
    const w = m[0];
    if (SECRET_WORDS.has(w.toLowerCase()) || GENERATED.test(w) || w.includes('{')) {
      cut = true;
      break;
    }
    end = m.index + w.length;
  }
  // Nothing secret-looking to cut at: two characters of it, but never the whole of a short name.
  if (!cut) return [...name].length <= 2 ? null : `${[...name].slice(0, 2).join('')}…`;
  const kept = name.slice(0, end);
  if (kept === '') return null;
  return kept.length > MAX_LABEL ? kept.slice(0, MAX_LABEL) : kept;
}

/** The label an entry is shown with (see above). Reads (so decrypts) the username when there is no other. */
export function safeLabel(r: ProxyRecord): string | null {
  if (r.label) return r.label;
  if (r.usernameTemplate) return safeUsernamePart(r.usernameTemplate);
  if (r.hasCredentials === false) return null;
  let username: string | null;
  try {
    username = r.username;
  } catch {
    // A stored username that cannot be opened (a changed storage key, a damaged row) fails that proxy's
    // dial with its own error; a list, an export or the dashboard shows it without a label.
    return null;
  }
  return username === null ? null : safeUsernamePart(username);
}
