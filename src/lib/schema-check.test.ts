import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Type } from 'typebox';
import { loadSources, SOURCES_SETTING } from '../sources/config.ts';
import { MemoryStore } from '../store/memory.ts';
import { matchesSchema } from './schema-check.ts';

const Policy = Type.Object(
  { n: Type.Integer({ minimum: 1, default: 3 }), mode: Type.Enum(['a', 'b']) },
  { additionalProperties: false },
);

test('a stored value is checked as it is: no coercion, no defaults filled in, nothing changed', () => {
  assert.equal(matchesSchema(Policy, { n: 2, mode: 'a' }), true);
  assert.equal(matchesSchema(Policy, { n: '2', mode: 'a' }), false, '"2" is not a number');
  assert.equal(matchesSchema(Policy, { n: 0, mode: 'a' }), false, 'below the minimum');
  assert.equal(matchesSchema(Policy, { n: 2, mode: 'c' }), false, 'not one of the values');
  assert.equal(matchesSchema(Policy, { n: 2, mode: 'a', extra: 1 }), false, 'an unknown field');
  const partial = { mode: 'a' };
  assert.equal(matchesSchema(Policy, partial), false, 'a required field missing');
  assert.deepEqual(partial, { mode: 'a' }, 'no default was filled in');
  assert.equal(matchesSchema(Type.Integer(), 2.5), false);
  assert.equal(matchesSchema(Type.String({ format: 'date-time' }), 'yesterday'), false, 'formats are known');
});

test('stored proxy sources that are no longer valid are skipped and counted', async () => {
  const store = new MemoryStore();
  await store.open();
  const ok = {
    name: 'a',
    url: 'https://lists.example/a.txt',
    format: 'text',
    protocol: 'http',
    refresh_s: 60,
    validate: true,
  };
  await store.putSetting(SOURCES_SETTING, [
    ok,
    { ...ok, name: 'b', refresh_s: '60' },
    { ...ok, name: 'c', format: 'xml' },
  ]);
  const { sources, skipped } = await loadSources(store);
  assert.deepEqual(
    sources.map((s) => s.name),
    ['a'],
  );
  assert.equal(skipped, 2);
});
