import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultMaxConnections, FALLBACK_MAX_CONNECTIONS, parseFdLimit, readFdLimit } from './fd-limit.ts';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 524288               files
Max locked memory         8388608              8388608              bytes
`;

describe('open-file limit', () => {
  it('reads the soft and hard limits of /proc/<pid>/limits', () => {
    assert.deepEqual(parseFdLimit(LIMITS), { soft: 1024, hard: 524288 });
    assert.deepEqual(parseFdLimit('Max open files  unlimited  unlimited  files\n'), {
      soft: Number.POSITIVE_INFINITY,
      hard: Number.POSITIVE_INFINITY,
    });
    assert.equal(parseFdLimit('Max cpu time unlimited unlimited seconds\n'), null);
    assert.equal(readFdLimit('/nonexistent/limits'), null);
  });

  it('this process runs with its soft limit raised to the hard one (Node does it at start)', (t) => {
    const l = readFdLimit();
    if (l === null) return t.skip('no /proc here');
    if (!Number.isFinite(l.hard)) return t.skip('no hard limit: Node raises the soft one as far as it can');
    assert.equal(l.soft, l.hard);
  });

  it('the default total cap is half the soft limit', () => {
    assert.equal(defaultMaxConnections({ soft: 20_000, hard: 20_000 }), 10_000);
    assert.equal(defaultMaxConnections({ soft: 1, hard: 1 }), 1);
    assert.equal(defaultMaxConnections(null), FALLBACK_MAX_CONNECTIONS);
  });
});
