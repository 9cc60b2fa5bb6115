import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import ipaddr from 'ipaddr.js';
import { AllowList, validateAllowList } from './allow.ts';

describe('validateAllowList', () => {
  it('accepts CIDRs, single IPs, host names, IDN names and wildcards', () => {
    const good = [
      '10.0.0.0/8',
      '192.168.1.7',
      '192.168.1.7/32',
      'fd00::/8',
      '::1',
      '0.0.0.0/0',
      'intranet',
      'Metadata.Internal.',
      'bücher.example',
      '*.corp',
      ' svc_a.local ',
    ];
    assert.deepEqual(validateAllowList(good), []);
  });

  it('reports each bad entry on its own line', () => {
    const bad = [
      '10.0.0.0/33',
      '::/129',
      '10.0.0.0/',
      '10.0.0.0/x',
      '999.1.1.1',
      '0x7f.1',
      'a b',
      '*.',
      '-x.com',
      'fe80::1%eth0',
    ];
    const problems = validateAllowList(bad);
    assert.equal(problems.length, bad.length, problems.join('\n'));
    assert.match(problems[0] ?? '', /^"10\.0\.0\.0\/33" has a prefix length outside 0-32$/);
    assert.match(problems[1] ?? '', /outside 0-128/);
    assert.match(problems[6] ?? '', /not a CIDR, IP address or host name/);
  });
});

describe('AllowList', () => {
  const list = new AllowList([
    '10.1.0.0/16',
    '192.0.2.5',
    'fd00::/16',
    'Intranet.',
    '*.svc.cluster.local',
    'junk/99',
  ]);
  const addr = (s: string) => ipaddr.parse(s);

  it('matches addresses inside the listed ranges only, without mixing families', () => {
    assert.equal(list.hasAddress(addr('10.1.200.3')), true);
    assert.equal(list.hasAddress(addr('10.2.0.1')), false);
    assert.equal(list.hasAddress(addr('192.0.2.5')), true);
    assert.equal(list.hasAddress(addr('192.0.2.6')), false);
    assert.equal(list.hasAddress(addr('fd00::1')), true);
    assert.equal(list.hasAddress(addr('fd01::1')), false);
    assert.equal(list.hasAddress(addr('::ffff:10.1.0.1')), false);
  });

  it('matches host names exactly, ignoring case and trailing dots; wildcards cover subdomains only', () => {
    assert.equal(list.hasHost('intranet'), true);
    assert.equal(list.hasHost('INTRANET.'), true);
    assert.equal(list.hasHost('x.intranet'), false);
    assert.equal(list.hasHost('api.svc.cluster.local'), true);
    assert.equal(list.hasHost('a.b.svc.cluster.local.'), true);
    assert.equal(list.hasHost('svc.cluster.local'), false);
    assert.equal(list.hasHost('evilsvc.cluster.local'), false);
  });

  it('an empty list allows nothing', () => {
    const empty = new AllowList([]);
    assert.equal(empty.hasHost('example.com'), false);
    assert.equal(empty.hasAddress(addr('8.8.8.8')), false);
  });
});
