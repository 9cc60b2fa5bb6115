// Routing parameters that forward-proxy clients smuggle in the proxy username
// (`label[-session-ID][-country-CC][-inspect-on|off]`) and, on the HTTP listener, in X-Rota-Session / X-Rota-Country.
// Clients cannot see our logs, so anything ambiguous is rejected rather than guessed at. Reasons are
// shown to clients and logged, and the username may hold something secret, so they name at most a
// known key, never a value.

export interface ProxyParams {
  readonly label: string;
  readonly sessionId?: string;
  /** ISO 3166-1 alpha-2, upper case. */
  readonly country?: string;
  /** HTTPS inspection asked for this connection (`-inspect-on` / `-inspect-off`); none: the settings decide. */
  readonly inspect?: 'on' | 'off';
}

export type ParamsResult =
  | { readonly ok: true; readonly params: ProxyParams }
  | { readonly ok: false; readonly reason: string };

/** The 249 officially assigned ISO 3166-1 alpha-2 codes (reserved ones such as UK or EU are not). */
const ISO_3166_ALPHA2 =
  'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV ' +
  'BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ' +
  'ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE ' +
  'IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY ' +
  'MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU ' +
  'NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM ' +
  'SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE ' +
  'VG VI VN VU WF WS YE YT ZA ZM ZW';

export const COUNTRY_CODES: ReadonlySet<string> = new Set(ISO_3166_ALPHA2.split(' '));

const LABEL = /^[A-Za-z0-9_.]{0,64}$/;
const SESSION_ID = /^[A-Za-z0-9_]{1,64}$/;
const MAX_USERNAME = 255;

type Key = 'session' | 'country' | 'inspect';
const KEYS: ReadonlySet<string> = new Set<Key>(['session', 'country', 'inspect']);

function fail(reason: string): ParamsResult {
  return { ok: false, reason };
}

function validSession(value: string): string | null {
  return SESSION_ID.test(value) ? value : null;
}

/** Upper-cased code, or null when it is not an assigned alpha-2 code. */
function validCountry(value: string): string | null {
  if (!/^[A-Za-z]{2}$/.test(value)) return null;
  const code = value.toUpperCase();
  return COUNTRY_CODES.has(code) ? code : null;
}

/** `on` or `off`, lower case only (like the key names); null otherwise. */
function validInspect(value: string): 'on' | 'off' | null {
  return value === 'on' || value === 'off' ? value : null;
}

const VALIDATORS: Readonly<Record<Key, (value: string) => string | null>> = {
  session: validSession,
  country: validCountry,
  inspect: validInspect,
};

interface Values {
  readonly sessionId?: string | undefined;
  readonly country?: string | undefined;
  readonly inspect?: 'on' | 'off' | undefined;
}

function build(label: string, v: Values): ProxyParams {
  // Absent keys are left out rather than set to undefined, so results compare structurally.
  return {
    label,
    ...(v.sessionId === undefined ? {} : { sessionId: v.sessionId }),
    ...(v.country === undefined ? {} : { country: v.country }),
    ...(v.inspect === undefined ? {} : { inspect: v.inspect }),
  };
}

/** `label[-session-ID][-country-CC][-inspect-on|off]`; null or '' (no username at all): no parameters. */
export function parseUsername(username: string | null): ParamsResult {
  if (username === null || username === '') return { ok: true, params: { label: '' } };
  if (username.length > MAX_USERNAME) return fail('username too long');
  const [label = '', ...rest] = username.split('-');
  if (!LABEL.test(label)) return fail('invalid label');
  const values: Partial<Record<Key, string>> = {};
  for (let i = 0; i < rest.length; i += 2) {
    const key = rest[i]!;
    // Only known key names are ever echoed: an unknown one may be a fragment of a secret.
    if (!KEYS.has(key)) return fail('unknown parameter key');
    const k = key as Key;
    if (values[k] !== undefined) return fail(`${k} given twice`);
    const raw = rest[i + 1];
    if (raw === undefined) return fail(`${k} has no value`);
    const value = VALIDATORS[k](raw);
    if (value === null) return fail(`invalid ${k}`);
    values[k] = value;
  }
  const inspect = values.inspect === undefined ? undefined : (validInspect(values.inspect) ?? undefined);
  return { ok: true, params: build(label, { sessionId: values.session, country: values.country, inspect }) };
}

/**
 * Folds X-Rota-Session / X-Rota-Country into the username's parameters. A header may repeat the
 * username's value (the country in any case) but not contradict it: silently preferring either side
 * would route the request somewhere the client did not ask for.
 */
export function mergeHeaders(
  fromUser: ProxyParams,
  headers: { readonly session?: string | undefined; readonly country?: string | undefined },
): ParamsResult {
  let { sessionId, country } = fromUser;
  if (headers.session !== undefined) {
    const value = validSession(headers.session);
    if (value === null) return fail('invalid X-Rota-Session');
    if (sessionId !== undefined && sessionId !== value) return fail('X-Rota-Session contradicts username');
    sessionId = value;
  }
  if (headers.country !== undefined) {
    const value = validCountry(headers.country);
    if (value === null) return fail('invalid X-Rota-Country');
    if (country !== undefined && country.toUpperCase() !== value) {
      return fail('X-Rota-Country contradicts username');
    }
    country = value;
  }
  return { ok: true, params: build(fromUser.label, { sessionId, country, inspect: fromUser.inspect }) };
}
