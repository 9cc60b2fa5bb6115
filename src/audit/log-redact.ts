/**
 * The logger's side of redaction (src/lib/logger.ts): every string of a line's object, at any depth, and
 * every logged error's message and stack pass through redactString. A line with nothing that could hold
 * a secret (most of them: the request line) is written as it came, without a copy.
 */
import pino from 'pino';
import { redactString } from './redact.ts';

const MAX_DEPTH = 6;
// What every masked form holds: a colon form, user-info, a URL, a key=value or "key": pair, an auth word.
const MAY_HOLD_SECRET = /[@="]|:\/\/|:[^:]*:|bearer|basic|digest|apikey|token/i;

function redactValue(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return MAY_HOLD_SECRET.test(value) ? redactString(value) : value;
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return value;
  if (value instanceof Error) return value; // the err serializer below redacts it
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null;
    value.forEach((v, i) => {
      const r = redactValue(v, depth + 1);
      if (r === v) return;
      copy ??= [...value];
      copy[i] = r;
    });
    return copy ?? value;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) {
    return value; // a Buffer, a Date, a class instance: written by its own toJSON, or as {}
  }
  return redactObject(value as Record<string, unknown>, depth);
}

function redactObject(obj: Record<string, unknown>, depth: number): Record<string, unknown> {
  let copy: Record<string, unknown> | null = null;
  for (const key of Object.keys(obj)) {
    const v = obj[key];
    const r = redactValue(v, depth + 1);
    if (r === v) continue;
    copy ??= { ...obj };
    copy[key] = r;
  }
  return copy ?? obj;
}

/** pino's `formatters.log`. */
export function redactLogObject(obj: Record<string, unknown>): Record<string, unknown> {
  return redactObject(obj, 0);
}

/** pino's `err` serializer, then its message, stack and own fields redacted. */
export function redactErr(err: unknown): unknown {
  const serialized = pino.stdSerializers.err(err as Error) as unknown;
  if (serialized === null || typeof serialized !== 'object') return redactValue(serialized, 0);
  const out = serialized as Record<string, unknown>;
  for (const key of Object.keys(out)) out[key] = redactValue(out[key], 1);
  return out;
}

/** pino's serializer of the message itself. */
export function redactMessage(msg: unknown): unknown {
  return redactValue(msg, 0);
}
