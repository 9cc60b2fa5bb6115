import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import type { TestApp } from './app.ts';

/** `PUT /api/v1/policies` with `body` as JSON; the answer as it came. */
export function putPolicies(t: TestApp, body: unknown): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'PUT',
    url: '/api/v1/policies',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}

/** Replaces the policy list with `rules`, which must be accepted. */
export async function putRules(t: TestApp, rules: unknown[]): Promise<void> {
  const res = await putPolicies(t, { rules });
  assert.equal(res.statusCode, 200, res.body);
}
