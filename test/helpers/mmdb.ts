/**
 * A small MaxMind DB writer for tests (format 2.0, https://maxmind.github.io/MaxMind-DB/): an IPv4
 * search tree with 32-bit records over the networks given, each pointing at its data (maps, strings,
 * unsigned integers), then the 16-byte separator, the data section, and the metadata after its marker.
 * What it writes is checked by reading it back with mmdb-lib, the reader Rota uses (exit/geoip.ts).
 */
import { writeFileSync } from 'node:fs';

export type MmdbValue = string | number | { readonly [key: string]: MmdbValue } | readonly MmdbValue[];

export interface MmdbNetwork {
  /** An IPv4 network, `a.b.c.d/len` (a bare address is /32). */
  readonly cidr: string;
  readonly data: { readonly [key: string]: MmdbValue };
}

const TYPE = { utf8: 2, map: 7, uint16: 5, uint32: 6, uint64: 9, array: 11 } as const;

/** Control byte(s) of a field: type, then its size (with the extended-size bytes) (spec: "Data section"). */
function control(type: number, size: number): Buffer {
  const ext = type > 7;
  const head = (ext ? 0 : type) << 5;
  let sizeBits: number;
  let sizeBytes: Buffer;
  if (size < 29) {
    sizeBits = size;
    sizeBytes = Buffer.alloc(0);
  } else if (size < 285) {
    sizeBits = 29;
    sizeBytes = Buffer.from([size - 29]);
  } else {
    sizeBits = 30;
    sizeBytes = Buffer.alloc(2);
    sizeBytes.writeUInt16BE(size - 285);
  }
  const typeByte = ext ? Buffer.from([type - 7]) : Buffer.alloc(0);
  return Buffer.concat([Buffer.from([head | sizeBits]), typeByte, sizeBytes]);
}

function uint(type: number, n: number | bigint): Buffer {
  let hex = BigInt(n).toString(16);
  if (hex === '0') hex = '';
  if (hex.length % 2 === 1) hex = `0${hex}`;
  const bytes = Buffer.from(hex, 'hex');
  return Buffer.concat([control(type, bytes.length), bytes]);
}

/** One value in the data section's encoding. Integers are uint32 (uint64 past it). */
export function encode(v: MmdbValue): Buffer {
  if (typeof v === 'string') {
    const bytes = Buffer.from(v, 'utf8');
    return Buffer.concat([control(TYPE.utf8, bytes.length), bytes]);
  }
  if (typeof v === 'number') return uint(v > 0xffffffff ? TYPE.uint64 : TYPE.uint32, v);
  if (Array.isArray(v)) return Buffer.concat([control(TYPE.array, v.length), ...v.map(encode)]);
  const entries = Object.entries(v as { [key: string]: MmdbValue });
  return Buffer.concat([
    control(TYPE.map, entries.length),
    ...entries.flatMap(([k, val]) => [encode(k), encode(val)]),
  ]);
}

interface Node {
  children: [Node | number | null, Node | number | null];
}

function bitsOf(cidr: string): number[] {
  const [addr = '', len = '32'] = cidr.split('/');
  const n = addr.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  return Array.from({ length: Number(len) }, (_, i) => Math.floor(n / 2 ** (31 - i)) % 2);
}

/** The whole file. Networks must not nest (a test names single addresses or disjoint ranges). */
export function buildMmdb(networks: readonly MmdbNetwork[], databaseType = 'GeoLite2-Country'): Buffer {
  const data: Buffer[] = [];
  let dataSize = 0;
  const root: Node = { children: [null, null] };
  for (const net of networks) {
    const offset = dataSize;
    const enc = encode(net.data);
    data.push(enc);
    dataSize += enc.length;
    const bits = bitsOf(net.cidr);
    let node = root;
    bits.forEach((bit, i) => {
      const b = bit as 0 | 1;
      if (i === bits.length - 1)
        node.children[b] = -(offset + 1); // a data offset, resolved below
      else {
        const next = node.children[b];
        if (next === null || typeof next === 'number') node.children[b] = { children: [null, null] };
        node = node.children[b] as Node;
      }
    });
  }
  const nodes: Node[] = [];
  const number = new Map<Node, number>();
  const walk = (n: Node) => {
    number.set(n, nodes.length);
    nodes.push(n);
    for (const c of n.children) if (c !== null && typeof c !== 'number') walk(c);
  };
  walk(root);
  const count = nodes.length;
  const tree = Buffer.alloc(count * 8);
  nodes.forEach((n, i) => {
    n.children.forEach((c, side) => {
      // Empty: the node count ("no data"); a node: its number; data: count + 16 + its offset.
      const value = c === null ? count : typeof c === 'number' ? count + 16 + (-c - 1) : (number.get(c) ?? 0);
      tree.writeUInt32BE(value, i * 8 + side * 4);
    });
  });
  const metadata = encode({
    node_count: count,
    record_size: 32,
    ip_version: 4,
    database_type: databaseType,
    languages: ['en'],
    binary_format_major_version: 2,
    binary_format_minor_version: 0,
    build_epoch: 1_700_000_000,
    description: { en: 'Rota test database' },
  });
  const marker = Buffer.concat([Buffer.from([0xab, 0xcd, 0xef]), Buffer.from('MaxMind.com')]);
  return Buffer.concat([tree, Buffer.alloc(16), ...data, marker, metadata]);
}

export function writeMmdb(path: string, networks: readonly MmdbNetwork[], databaseType?: string): void {
  writeFileSync(path, buildMmdb(networks, databaseType));
}
