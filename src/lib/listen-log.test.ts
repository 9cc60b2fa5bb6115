import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { boundDoor, logListening } from './listen-log.ts';

function capture() {
  const lines: { fields: Record<string, unknown>; msg: string }[] = [];
  return {
    lines,
    logger: { info: (fields: object, msg: string) => lines.push({ fields: { ...fields }, msg }) },
  };
}

describe('logListening', () => {
  it('writes one line per door with its bound address and port, off doors included', () => {
    const { lines, logger } = capture();
    logListening(logger, [
      boundDoor('api', { address: '127.0.0.1', family: 'IPv4', port: 41234 }),
      boundDoor('http', { address: '::1', family: 'IPv6', port: 8080 }),
      boundDoor('socks5', null),
    ]);
    assert.deepEqual(lines, [
      {
        fields: { listener: 'api', address: '127.0.0.1', port: 41234 },
        msg: 'API listening on 127.0.0.1:41234',
      },
      { fields: { listener: 'http', address: '::1', port: 8080 }, msg: 'HTTP proxy listening on [::1]:8080' },
      { fields: { listener: 'socks5', address: null, port: null }, msg: 'SOCKS5 off (ROTA_SOCKS_PORT=0)' },
    ]);
  });

  it('names a pipe path as it is', () => {
    const { lines, logger } = capture();
    logListening(logger, [boundDoor('api', '/tmp/rota.sock')]);
    assert.equal(lines[0]?.msg, 'API listening on /tmp/rota.sock');
  });
});
