import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BufferedAnswer } from '../outbound/buffered-call.ts';
import { type Identified, ok } from './envelope.ts';

/** The fields of a proxied answer other than the body (schemas/request.ts `ProxiedResponse`): the call's. */
export type ProxiedFields = BufferedAnswer['fields'];

// Stands in for the body while the rest of the envelope is serialised. Random per process, so that no
// upstream header can contain it; checked to occur exactly once all the same.
const SLOT = `rota-body-${randomUUID()}`;

const SMALL_BYTES = 16 * 1024;

/**
 * The target's body as the bytes of a JSON string literal, without ever holding it as a JS string of
 * characters.
 *
 *   valid UTF-8 bytes ─latin1─▶ one byte per char ─JSON.stringify─▶ escapes only " \ and < 0x20 ─latin1─▶ bytes
 *
 * Read as latin1, every byte is one character, so V8's native JSON.stringify escapes exactly the bytes
 * JSON requires and leaves every other byte, including each byte of a multi-byte UTF-8 sequence, as it
 * was; written back as latin1, that is the UTF-8 text quoted. Bodies that are not UTF-8 go out as base64.
 */
export function bodyLiteral(body: Buffer): { literal: string; encoding: 'utf8' | 'base64' } {
  if (isUtf8(body)) return { literal: JSON.stringify(body.toString('latin1')), encoding: 'utf8' };
  return { literal: `"${body.toString('base64')}"`, encoding: 'base64' };
}

// 63 KiB: a multiple of 3 (base64 needs whole groups of three bytes), and small enough that each part,
// even fully escaped, is an ordinary young-generation string rather than a large object.
const PART_BYTES = 3 * 21 * 1024;

/**
 * The same literal, without its quotes, as parts of at most PART_BYTES of the body each. Why: a whole
 * 1 MiB body made two 1 MiB strings (latin1, then escaped) in V8's large-object space per answer, which
 * only a full GC frees; under 1 MiB answers at 10 connections that was a good part of the peak RSS.
 * Escaping is per byte (JSON.stringify of latin1 characters) and base64 per group of three bytes, so the
 * parts joined are exactly bodyLiteral's literal (proxied-answer.test.ts checks it).
 */
export function bodyParts(body: Buffer): { parts: string[]; bytes: number; encoding: 'utf8' | 'base64' } {
  const utf8 = isUtf8(body);
  const parts: string[] = [];
  let bytes = 0;
  for (let at = 0; at < body.length; at += PART_BYTES) {
    const slice = body.subarray(at, Math.min(body.length, at + PART_BYTES));
    const part = utf8 ? JSON.stringify(slice.toString('latin1')).slice(1, -1) : slice.toString('base64');
    parts.push(part);
    bytes += part.length;
  }
  return { parts, bytes, encoding: utf8 ? 'utf8' : 'base64' };
}

/**
 * The 200 answer of POST request, written as bytes: the envelope around the body, built once.
 *
 * Fastify's schema serialiser would escape a 1 MiB body in JavaScript, one slice at a time, then encode
 * the whole envelope to UTF-8 again on the socket: several copies and most of the CPU of a large answer.
 * Here the body is copied into the answer once, with native code, and the rest of the envelope is
 * JSON.stringify of a handful of fields; the document's schema for this answer is unchanged.
 */
export function proxiedAnswer(
  req: Identified,
  fields: ProxiedFields,
  body: Buffer,
  o: { slot?: string; smallBytes?: number } = {},
): Buffer | string {
  const slot = o.slot ?? SLOT;
  // A small body is cheaper as one plain string (one stringify, one write with the head); the byte
  // path pays off from a few KiB on. Both give the same bytes (proxied-answer.test.ts).
  if (body.length <= (o.smallBytes ?? SMALL_BYTES) && isUtf8(body))
    return plainAnswer(req, fields, body, 'utf8');
  const { parts, bytes, encoding } = bodyParts(body);
  const quoted = `"${slot}"`;
  const text = JSON.stringify(envelope(req, fields, slot, encoding));
  const at = text.indexOf(quoted);
  // Only if an upstream header carried the slot: the plain way, which cannot be confused.
  if (at < 0 || text.indexOf(quoted, at + 1) >= 0) return plainAnswer(req, fields, body, encoding);
  const head = text.slice(0, at + 1);
  const tail = text.slice(at + quoted.length - 1);
  // Head and tail may hold any character (header values): UTF-8. The parts are bytes as latin1.
  const headLen = Buffer.byteLength(head);
  const out = Buffer.allocUnsafe(headLen + bytes + Buffer.byteLength(tail));
  let pos = out.write(head, 0, 'utf8');
  for (const part of parts) pos += out.write(part, pos, 'latin1');
  out.write(tail, pos, 'utf8');
  return out;
}

/** The whole envelope as one string, the body decoded into it: for small bodies, and the fallback. */
function plainAnswer(
  req: Identified,
  fields: ProxiedFields,
  body: Buffer,
  encoding: 'utf8' | 'base64',
): string {
  return JSON.stringify(envelope(req, fields, body.toString(encoding), encoding));
}

/** Field order as in the schema (schemas/request.ts `ProxiedResponse`). */
function envelope(req: Identified, f: ProxiedFields, body: string, encoding: 'utf8' | 'base64') {
  return ok(req, {
    status_code: f.status_code,
    headers: f.headers,
    body,
    body_encoding: encoding,
    proxy_used: f.proxy_used,
    proxy_id: f.proxy_id,
    attempts: f.attempts,
    elapsed_ms: f.elapsed_ms,
    ...(f.session_id === undefined ? {} : { session_id: f.session_id }),
    ...(f.policy === undefined ? {} : { policy: f.policy }),
  });
}

export function sendProxied(
  req: FastifyRequest,
  reply: FastifyReply,
  fields: ProxiedFields,
  body: Buffer,
): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(proxiedAnswer(req, fields, body));
}
