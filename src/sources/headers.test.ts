import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryStore } from '../store/memory.ts';
import { headerProblems, openHeaders, sealHeaders, shownHeaders, withKeptHeaders } from './headers.ts';

const current = [{ name: 'list', headers: { Authorization: 'Bearer t0k' } }];

test('problems: reserved and repeated names, `***` with nothing stored, too many bytes; no value echoed', () => {
  const problems = headerProblems(
    {
      name: 'other',
      headers: { Host: 'h', 'X-A': 'v1', 'x-a': 'v2', Authorization: '***', 'X-Big': 'v'.repeat(17_000) },
    },
    3,
    current,
  );
  assert.deepEqual(
    problems.map((p) => p.loc.join('.')),
    ['body.3.headers.Host', 'body.3.headers.x-a', 'body.3.headers.Authorization', 'body.3.headers'],
  );
  assert.ok(problems.every((p) => p.input === null));
  assert.deepEqual(headerProblems({ name: 'list', headers: { authorization: '***' } }, 0, current), []);
});

test('`***` keeps the stored value under the same source and header name, in any case', () => {
  const next = withKeptHeaders({ name: 'LIST', headers: { authorization: '***', 'X-New': 'n' } }, current);
  assert.deepEqual(next.headers, { authorization: 'Bearer t0k', 'X-New': 'n' });
  assert.deepEqual(shownHeaders(next.headers), { authorization: '***', 'X-New': '***' });
});

test('sealed and opened through the store, per source and header name', async () => {
  const store = new MemoryStore();
  const sealed = sealHeaders(store, 'list', { Authorization: 'Bearer t0k' });
  assert.deepEqual(openHeaders(store, 'list', sealed), { Authorization: 'Bearer t0k' });
});
