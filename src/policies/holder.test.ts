import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryStore } from '../store/memory.ts';
import { PolicyHolder, policyProblems } from './holder.ts';
import type { PolicyList } from './schema.ts';

describe('policy holder', () => {
  it('finds what the schema cannot: bad host patterns, names used twice, blank body patterns', () => {
    const list = {
      rules: [
        { name: 'a', match: { hosts: ['ok.test', 'bad host', '*.x.*'] } },
        { name: 'a', match: { hosts: ['*'] }, ban: { body_patterns: ['captcha', '  '] } },
      ],
    } as PolicyList;
    const found = policyProblems(list).map((p) => `${p.loc.join('.')}: ${p.msg}`);
    assert.equal(found.length, 4, found.join('\n'));
    assert.ok(found.some((f) => f.startsWith('rules.0.match.hosts.1:')));
    assert.ok(found.some((f) => f.startsWith('rules.0.match.hosts.2:')));
    assert.ok(found.includes('rules.1.name: name already used by rules[0]'));
    assert.ok(found.includes('rules.1.ban.body_patterns.1: must not be blank'));
  });

  it('keeps patterns and countries canonical, persists, and compiles again only on change', async () => {
    const store = new MemoryStore();
    const h = new PolicyHolder(store);
    const first = h.book();
    assert.equal(h.book(), first);
    await h.replace({
      rules: [
        {
          name: 'de',
          match: { hosts: ['WWW.Example.COM.', 'www.example.com'] },
          proxies: { countries: ['de'] },
        },
      ],
    });
    assert.deepEqual(h.get().rules[0]?.match.hosts, ['www.example.com']);
    assert.deepEqual(h.get().rules[0]?.proxies?.countries, ['DE']);
    assert.notEqual(h.book(), first);
    assert.equal(h.book().match({ host: 'www.example.com' })?.name, 'de');
    const again = new PolicyHolder(store);
    assert.equal(await again.load(), true);
    assert.equal(again.book().match({ host: 'www.example.com' })?.name, 'de');
  });

  it('tells the rule names in use after a change made here and after a reload of one made elsewhere', async () => {
    const store = new MemoryStore();
    const [here, there] = [new PolicyHolder(store), new PolicyHolder(store)];
    const told: string[][] = [];
    there.onRules((names) => told.push([...names]));
    await here.replace({
      rules: [
        { name: 'a', match: { hosts: ['*'] } },
        { name: 'b', match: { hosts: ['x.test'] } },
      ],
    });
    await there.load();
    await here.replace({ rules: [{ name: 'b', match: { hosts: ['x.test'] } }] });
    await there.load();
    assert.deepEqual(told, [['a', 'b'], ['b']]);
  });
});
