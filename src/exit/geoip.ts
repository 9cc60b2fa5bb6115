/**
 * Exit countries and ASNs from the operator's MaxMind-format database (ROTA_GEOIP_DB): a GeoLite2 or
 * GeoIP2 Country or City file, an ASN file, or one holding both (DB-IP and others write the same
 * format). Read whole into memory once by mmdb-lib; a lookup is a walk of its search tree.
 */
import { readFileSync } from 'node:fs';
import { Reader, type Response } from 'mmdb-lib';

export interface GeoAnswer {
  /** ISO 3166-1 alpha-2, upper case; null when the file has no country for the address. */
  readonly country: string | null;
  readonly asn: number | null;
}

interface GeoRecord {
  country?: { iso_code?: unknown };
  registered_country?: { iso_code?: unknown };
  autonomous_system_number?: unknown;
}

export class GeoIp {
  readonly #reader: Reader<Response>;

  /** Throws when the file cannot be read or is not an MMDB file (start-up then stops, naming it). */
  constructor(path: string) {
    this.#reader = new Reader<Response>(readFileSync(path));
  }

  /** What the file knows of `ip` (nothing: both null). */
  lookup(ip: string): GeoAnswer {
    let rec: GeoRecord | null;
    try {
      rec = this.#reader.get(ip) as GeoRecord | null;
    } catch {
      return { country: null, asn: null };
    }
    const iso = rec?.country?.iso_code ?? rec?.registered_country?.iso_code;
    const asn = rec?.autonomous_system_number;
    return {
      country: typeof iso === 'string' && /^[A-Za-z]{2}$/.test(iso) ? iso.toUpperCase() : null,
      asn: typeof asn === 'number' && Number.isInteger(asn) ? asn : null,
    };
  }
}
