import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ERRORS, type RotaErrorCode, SOCKS5_REPLY, specOf, wireCode } from '../src/errors/codes.ts';
import { RotaError } from '../src/errors/rota-error.ts';
import { refusal } from '../src/forward/answers.ts';

const CODES = Object.keys(ERRORS) as RotaErrorCode[];

describe('the error registry', () => {
  it('gives every code one HTTP status of an error, one SOCKS5 reply of a failure and a message', () => {
    const replies = new Set<number>(Object.values(SOCKS5_REPLY));
    for (const code of CODES) {
      const s = specOf(code);
      assert.ok(s.status >= 400 && s.status <= 599, code);
      assert.ok(replies.has(s.socks) && s.socks !== SOCKS5_REPLY.SUCCEEDED, code);
      assert.ok(s.message.length > 0, code);
    }
  });

  it('only the REST interface’s two names keep two statuses, each situation a code of its own', () => {
    const statuses = new Map<string, Set<number>>();
    for (const code of CODES) {
      const set = statuses.get(wireCode(code)) ?? new Set<number>();
      set.add(specOf(code).status);
      statuses.set(wireCode(code), set);
    }
    const shared = [...statuses].filter(([, s]) => s.size > 1).map(([w, s]) => `${w} ${[...s].sort()}`);
    assert.deepEqual(shared.sort(), ['INVALID_URL 400,422', 'VALIDATION_ERROR 400,422']);
  });

  it('an error, the API envelope and the listeners agree on the status; there is no override', () => {
    for (const code of CODES) {
      const e = new RotaError(code);
      assert.equal(e.status, specOf(code).status);
      assert.equal(e.statusCode, e.status);
      assert.equal(e.message, specOf(code).message, 'the code’s message when none is given');
      const r = refusal(code);
      assert.equal(r.status, e.status, code);
      assert.equal(r.socksReply, e.socksReply, code);
      assert.equal(r.code, e.wireCode, code);
    }
  });

  it('a misspelt code, or a status beside it, does not compile', () => {
    // @ts-expect-error: not a code of the registry (tsc --noEmit in npm test fails if this compiles)
    assert.throws(() => specOf('PROXY_POOL_EMTPY').status);
    // @ts-expect-error: a RotaError takes no status of its own
    const e = new RotaError('PROXY_POOL_EMPTY', 'x', { status: 500 });
    assert.equal(e.status, 503);
  });
});
