import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SsrfGuard } from '../ssrf/guard.ts';
import { destinationHost } from './socks.ts';
import { UpstreamError } from './types.ts';

describe('destinationHost (socks4/socks5 resolve the target themselves)', () => {
  const guard = new SsrfGuard({ allow: [] });
  const check = (ip: string) => guard.checkAddress(ip);

  it('refuses an address the SSRF rules forbid, even when the name passed the guard earlier (rebinding)', async () => {
    await assert.rejects(destinationHost('localhost', 'socks5', check), (e: unknown) => {
      assert.ok(e instanceof UpstreamError);
      assert.equal(e.kind, 'target_forbidden');
      assert.equal(e.proxyFault, false);
      assert.equal(e.mayHaveReachedTarget, false);
      return true;
    });
  });

  it('resolves when allowed, and leaves names to socks4a/socks5h proxies', async () => {
    const allowAll = new SsrfGuard({ allow: ['127.0.0.0/8', '::1/128'] });
    assert.equal(
      await destinationHost('localhost', 'socks4', (ip) => allowAll.checkAddress(ip)),
      '127.0.0.1',
    );
    assert.equal(await destinationHost('example.invalid', 'socks5h', check), 'example.invalid');
  });
});
