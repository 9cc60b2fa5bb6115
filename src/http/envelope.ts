import type { FastifyReply, FastifyRequest } from 'fastify';
import { type RotaErrorCode, specOf, wireCode } from '../errors/codes.ts';
import type { DetailItem } from '../errors/rota-error.ts';
import { isoNow } from '../lib/iso-now.ts';
import { VERSION } from '../version.ts';

export interface Meta {
  request_id: string;
  timestamp: string;
  version: string;
}

/** What an envelope needs of a request: its id. Answers given before a request exists have one too. */
export type Identified = Pick<FastifyRequest, 'id'>;

export function meta(req: Identified, now?: Date): Meta {
  return { request_id: req.id, timestamp: now ? now.toISOString() : isoNow(), version: VERSION };
}

export function ok<T>(req: Identified, data: T) {
  return { status: 'success' as const, data, error: null, meta: meta(req) };
}

export interface ErrorBody {
  status: 'error';
  data: null;
  /** The code clients see (errors/codes.ts wireCode). */
  error: { code: string; message: string; details: unknown; timestamp: string };
  meta: Meta;
  detail?: DetailItem[];
}

export function errorBody(
  req: Identified,
  code: RotaErrorCode,
  message: string,
  details: unknown = null,
  detail?: DetailItem[],
  now?: Date,
): ErrorBody {
  const m = meta(req, now);
  const body: ErrorBody = {
    status: 'error',
    data: null,
    error: { code: wireCode(code), message, details, timestamp: m.timestamp },
    meta: m,
  };
  if (detail) body.detail = detail;
  return body;
}

/** The error envelope, with the code's status (errors/codes.ts). */
export function sendError(
  req: FastifyRequest,
  reply: FastifyReply,
  code: RotaErrorCode,
  message: string,
  details: unknown = null,
  detail?: DetailItem[],
): FastifyReply {
  return reply
    .code(specOf(code).status)
    .type('application/json; charset=utf-8')
    .send(errorBody(req, code, message, details, detail));
}
