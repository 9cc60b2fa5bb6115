import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeApp, type TestApp } from './helpers/app.ts';

/**
 * The API description stands on its own: it names behaviours, never a text outside the repository (the
 * design record is docs/decisions.md). Each phrase below once cited such a text.
 */
const CITATIONS = [/spec section/i, /section 7/i, /DECISIONS/, /wave [23]/i, /interface spec/i, /\bspec \d/i];

describe('/openapi.json cites nothing outside the repository', () => {
  let t: TestApp;
  before(async () => {
    t = await makeApp();
  });
  after(() => t.close());

  it('has no reference to an outside specification, decision record or past work', async () => {
    const res = await t.app.inject({ url: '/openapi.json' });
    assert.equal(res.statusCode, 200);
    const text = res.body;
    for (const re of CITATIONS) {
      const m = re.exec(text);
      assert.equal(m, null, `${re} found: …${m ? text.slice(Math.max(0, m.index - 80), m.index + 80) : ''}…`);
    }
  });

  it('still describes the error envelope', async () => {
    const text = (await t.app.inject({ url: '/openapi.json' })).body;
    assert.match(text, /"description":"Error envelope: /);
  });
});
