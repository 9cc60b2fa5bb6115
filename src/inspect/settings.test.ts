// Inspection settings: decide() in every combination of lists and client ask, the environment default,
// partial updates, what the store keeps and reloads, and the change listener.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MemoryStore } from '../store/memory.ts';
import { type ClientAsk, InspectionSettings } from './settings.ts';

function holder(inspectHosts: string[] = [], store = new MemoryStore()): InspectionSettings {
  return new InspectionSettings(store, { inspectHosts });
}

const ASKS: ClientAsk[] = ['on', 'off', undefined];

describe('InspectionSettings.decide', () => {
  it('with nothing set, inspects only what the client asks for', () => {
    const s = holder();
    assert.equal(s.decide('example.com', undefined), false);
    assert.equal(s.decide('example.com', 'off'), false);
    assert.equal(s.decide('example.com', 'on'), true, "the client's on opens a host with hosts empty");
  });

  it('hosts opens its hosts unless the client says off', async () => {
    const s = holder(['*.shop.example', 'api.example']);
    assert.equal(s.decide('www.shop.example', undefined), true);
    assert.equal(s.decide('API.example.', undefined), true);
    assert.equal(s.decide('shop.example', undefined), false);
    assert.equal(s.decide('www.shop.example', 'off'), false, "the client's off wins over hosts");
    assert.equal(s.decide('other.example', 'on'), true);
  });

  it('passthrough wins over hosts and over the client', async () => {
    const s = holder(['*']);
    await s.update({ passthrough: ['*.bank.example', '10.0.0.1'] });
    for (const ask of ASKS) {
      assert.equal(s.decide('www.bank.example', ask), false, String(ask));
      assert.equal(s.decide('10.0.0.1', ask), false, String(ask));
    }
    assert.equal(s.decide('bank.example', undefined), true, 'the apex is not in *.bank.example');
    assert.equal(s.decide('[::1]', undefined), true, '* names IP literals too');
  });

  it('is the rule as a table: passthrough, then off, then on, then hosts', async () => {
    const s = holder();
    for (const inHosts of [false, true]) {
      for (const inPass of [false, true]) {
        await s.update({ hosts: inHosts ? ['h.example'] : [], passthrough: inPass ? ['h.example'] : [] });
        for (const ask of ASKS) {
          const expected = !inPass && ask !== 'off' && (ask === 'on' || inHosts);
          assert.equal(s.decide('h.example', ask), expected, `hosts ${inHosts} pass ${inPass} ask ${ask}`);
        }
      }
    }
  });
});

describe('InspectionSettings: values, storage and changes', () => {
  it('starts from ROTA_INSPECT_HOSTS; a PUT replaces only the lists it gives', async () => {
    const s = holder(['a.example']);
    assert.deepEqual(s.get(), { hosts: ['a.example'], passthrough: [] });
    assert.equal(s.hostsSource, 'environment');
    await s.update({ passthrough: ['p.example'] });
    assert.deepEqual(s.get(), { hosts: ['a.example'], passthrough: ['p.example'] });
    assert.equal(s.hostsSource, 'environment', 'hosts still follows the variable');
    await s.update({ hosts: [] });
    assert.deepEqual(s.get(), { hosts: [], passthrough: ['p.example'] });
    assert.equal(s.hostsSource, 'storage');
    assert.equal(s.decide('a.example', undefined), false, 'the new lists apply at once');
  });

  it('keeps only what a PUT set: another holder on the same store loads it over its own default', async () => {
    const store = new MemoryStore();
    await holder(['env.example'], store).update({ passthrough: ['p.example'] });
    const again = holder(['other-env.example'], store);
    assert.equal(await again.load(), true);
    assert.deepEqual(again.get(), { hosts: ['other-env.example'], passthrough: ['p.example'] });
    assert.equal(again.decide('p.example', 'on'), false);
    assert.equal(await holder([], new MemoryStore()).load(), false, 'nothing stored');
  });

  it('ignores stored patterns that are no longer valid, and a stored value of the wrong shape', async () => {
    const store = new MemoryStore();
    await store.putSetting('inspection_hosts', { hosts: ['ok.example', 'a.*.b'], passthrough: 'nope' });
    const s = holder(['env.example'], store);
    await s.load();
    assert.deepEqual(s.get(), { hosts: ['ok.example'], passthrough: [] });
    assert.equal(s.decide('ok.example', undefined), true);
  });

  it('tells its listeners after an update made here, not after a load', async () => {
    const store = new MemoryStore();
    const s = holder([], store);
    let told = 0;
    s.onChange(() => told++);
    await s.update({ hosts: ['x.example'] });
    assert.equal(told, 1);
    await s.load();
    assert.equal(told, 1);
  });

  it('a failed write changes nothing', async () => {
    const store = new MemoryStore();
    const s = holder(['a.example'], store);
    store.putSetting = async () => {
      throw new Error('store down');
    };
    await assert.rejects(s.update({ hosts: ['b.example'] }), /store down/);
    assert.deepEqual(s.get().hosts, ['a.example']);
    assert.equal(s.decide('b.example', undefined), false);
  });
});
