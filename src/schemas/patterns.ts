/**
 * Regular expressions (JSON Schema `pattern`, ECMA-262 syntax) for the strings the API parses itself. Each
 * one states exactly what a parser or handler of the server accepts, so that a client generated from the
 * OpenAPI document, or a fuzzer driven by it, never sends a value the document allows and the server
 * refuses. They are written to read the same in the regex engines that judge the document (JavaScript,
 * Python, Rust): `[0-9]` rather than `\d`, explicit character sets rather than `\s`, no inline flags.
 * test/openapi-constraints.test.ts holds each one against the code it describes.
 */

const HEX = '[0-9A-Fa-f]';

/** Every character `String.prototype.trim` removes (ECMA-262 WhiteSpace and LineTerminator). */
const TRIMMED_SET = '\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';
const TRIMMED = `[${TRIMMED_SET}]`;

/** A string that `trim()` does not leave empty: one character that is not white space. */
export const NOT_BLANK_PATTERN = `[^${TRIMMED_SET}]`;

/** 0-255 as Node's `isIP` reads it: no leading zero. */
const DEC_OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])';
const IPV4 = `${DEC_OCTET}(?:\\.${DEC_OCTET}){3}`;

/** An IPv6 address as Node's `isIP` reads it (lib/internal/net.js), without the zone. */
const H16 = `${HEX}{1,4}`;
const IPV6 =
  '(?:' +
  [
    `(?:${H16}:){7}(?:${H16}|:)`,
    `(?:${H16}:){6}(?:${IPV4}|:${H16}|:)`,
    `(?:${H16}:){5}(?::${IPV4}|(?::${H16}){1,2}|:)`,
    `(?:${H16}:){4}(?:(?::${H16}){0,1}:${IPV4}|(?::${H16}){1,3}|:)`,
    `(?:${H16}:){3}(?:(?::${H16}){0,2}:${IPV4}|(?::${H16}){1,4}|:)`,
    `(?:${H16}:){2}(?:(?::${H16}){0,3}:${IPV4}|(?::${H16}){1,5}|:)`,
    `(?:${H16}:){1}(?:(?::${H16}){0,4}:${IPV4}|(?::${H16}){1,6}|:)`,
    `(?::(?:(?::${H16}){0,5}:${IPV4}|(?::${H16}){1,7}|:))`,
  ].join('|') +
  ')';
/**
 * The parser lower-cases a host before it judges it, and one character outside ASCII lower-cases into
 * ASCII: U+212A KELVIN SIGN becomes `k`. It counts as a letter here too.
 */
const KELVIN = '\\u212a';

/** Node also accepts a zone index (`fe80::1%eth0`). */
const IPV6_ZONE = `(?:%[0-9A-Za-z${KELVIN}.:-]+)?`;

/** 1-65535 in at most five digits, leading zeros allowed (`Number('00080')`). */
const PORT_1_65535 =
  '(?:[1-9][0-9]{0,3}|0[1-9][0-9]{0,3}|00[1-9][0-9]{0,2}|000[1-9][0-9]?|0000[1-9]' +
  '|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';

/**
 * One `%XX` sequence that `decodeURIComponent` accepts: ASCII, or a whole UTF-8 character (no overlong
 * form, no surrogate, nothing past U+10FFFF).
 */
const CONT = `%[89ABab]${HEX}`;
const PERCENT_ENCODED = [
  `%[0-7]${HEX}`,
  `%[Cc][2-9A-Fa-f]${CONT}`,
  `%[Dd]${HEX}${CONT}`,
  `%[Ee]0%[ABab]${HEX}${CONT}`,
  `%[Ee][1-9A-Ca-cEeFf]${CONT}${CONT}`,
  `%[Ee][Dd]%[89]${HEX}${CONT}`,
  `%[Ff]0%[9ABab]${HEX}${CONT}${CONT}`,
  `%[Ff][1-3]${CONT}${CONT}${CONT}`,
  `%[Ff]4%8${HEX}${CONT}${CONT}`,
].join('|');

/** A DNS label: 1-63 letters, digits and hyphens, no hyphen at either end. */
const LABEL = `[A-Za-z0-9${KELVIN}](?:[A-Za-z0-9${KELVIN}-]{0,61}[A-Za-z0-9${KELVIN}])?`;
/**
 * A host name as src/pool/proxy-url.ts takes it: labels, one optional trailing dot, at most 253
 * characters without it, and not made of digits and dots only (that must be a valid IPv4 address). It is
 * always followed by `:` (the port is required), which the two look-aheads lean on.
 */
const NAME_CHAR = `[A-Za-z0-9${KELVIN}.-]`;
const PROXY_HOST_NAME =
  `(?![0-9.]+:)(?!${NAME_CHAR}{255}|${NAME_CHAR}{253}[A-Za-z0-9${KELVIN}-]:)` +
  `${LABEL}(?:\\.${LABEL})*\\.?`;

const PROXY_SCHEME = '(?:[Hh][Tt][Tt][Pp][Ss]?|[Ss][Oo][Cc][Kk][Ss](?:4[Aa]?|5[Hh]?))';

/**
 * A proxy URL exactly as `parseProxyUrl` (src/pool/proxy-url.ts) accepts it:
 * `scheme://[user[:password]@]host:port[/]`, surrounding white space ignored; scheme http, https, socks4,
 * socks4a, socks5 or socks5h in any case; user-info without `@ / ? #` and with valid UTF-8 percent-escapes
 * only; host a name, a dotted IPv4 address (a trailing dot allowed) or a bracketed IPv6 address; port
 * 1-65535; no path, query or fragment.
 */
export const PROXY_URL_PATTERN =
  `^${TRIMMED}*${PROXY_SCHEME}://` +
  `(?:(?:[^@/?#%]|${PERCENT_ENCODED})*@)?` +
  `(?:\\[${IPV6}${IPV6_ZONE}\\]|${IPV4}\\.?|${PROXY_HOST_NAME})` +
  `:${PORT_1_65535}/?${TRIMMED}*$`;

/**
 * A proxy URL that carries no credentials: no user-info, or one that decodes to an empty user and
 * password (`@`, `:@`). Required when `username` or `password` is given as a field. Meant to be checked
 * together with PROXY_URL_PATTERN, where `@` only ends the user-info.
 */
export const PROXY_URL_WITHOUT_CREDENTIALS_PATTERN = '^[^@]*$|://:?@';

/** 0-65535 in at most five digits (the WHATWG URL parser's ports; leading zeros only below 10000). */
const PORT_0_65535 = '(?:[0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';

/**
 * A host name every WHATWG URL parser takes as one: letters, digits, `_` and `-` in labels, and a last label
 * that starts with a letter (a last label that is a number makes the parser read an IPv4 address).
 */
const TARGET_HOST_NAME = '(?:[A-Za-z0-9_-]+\\.)*[A-Za-z][A-Za-z0-9_-]*\\.?';

/**
 * A target URL of `POST request`: http or https (any case), no user-info, host a name, a dotted IPv4
 * address or a bracketed IPv6 address, an optional port, then any path, query and fragment (the WHATWG
 * URL parser percent-encodes what needs it). Every URL it matches parses; the SSRF rules then judge the
 * host (400 INVALID_URL).
 */
export const TARGET_URL_PATTERN =
  `^[Hh][Tt][Tt][Pp][Ss]?://(?:${IPV4}|\\[${IPV6}\\]|${TARGET_HOST_NAME})` +
  `(?::${PORT_0_65535})?(?:[/?#][\\s\\S]*)?$`;

/**
 * A CORS origin as `PUT config` takes it (the ORIGIN check in src/http/routes/config.ts):
 * `http(s)://host[:port]`, host letters, digits, dots and hyphens or a bracketed IPv6 address, no path.
 * `*` is added when ROTA_CORS_ALLOW_CREDENTIALS is false.
 */
export function corsOriginPattern(allowWildcard: boolean): string {
  const origin = 'https?://(?:[A-Za-z0-9.-]+|\\[[0-9A-Fa-f:.]+\\])(?::[0-9]{1,5})?';
  return allowWildcard ? `^(?:\\*|${origin})$` : `^${origin}$`;
}

/**
 * Header names are RFC 9110 tokens; values are RFC 9110 field values: tab, space, visible ASCII and
 * obs-text (0x80-0xFF), what can go on the wire (and what undici sends) (checkHeaders in routes/request.ts).
 */
export const HEADER_NAME_PATTERN = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$";
export const HEADER_VALUE_PATTERN = '^[\\t\\u0020-\\u007e\\u0080-\\u00ff]*$';

/** Standard base64 with its padding, as `POST request` decodes a body with `body_encoding: base64`. */
export const BASE64_PATTERN = '^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$';

/** A label of a host pattern: as LABEL, and `_` too. */
const PATTERN_LABEL = '[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?';

/**
 * A host pattern exactly as `checkPattern` (src/inspect/patterns.ts) accepts it: `*`; an IPv4 address; an
 * IPv6 address, bracketed or not, without a zone; or a name (labels of letters, digits, `-` and `_`, one
 * optional trailing dot, a last label that is not all digits), optionally after `*.`.
 */
export const HOST_PATTERN_PATTERN =
  `^(?:\\*|${IPV4}|${IPV6}|\\[${IPV6}\\]|` +
  `(?:\\*\\.)?(?!(?:[^.]*\\.)*[0-9]+\\.?$)${PATTERN_LABEL}(?:\\.${PATTERN_LABEL})*\\.?)$`;
