import * as assert from 'node:assert/strict';
import { WriteQueue } from '../../../src/core/loop/writeQueue';

describe('WriteQueue: serial writes whose failures reach their callers', () => {
  const tick = () => new Promise((r) => setTimeout(r, 1));

  it('runs the writes one after another, in the order queued', async () => {
    const q = new WriteQueue();
    const seen: string[] = [];
    const write = (name: string, delay: number) =>
      q.push(async () => {
        seen.push(`${name}+`);
        await new Promise((r) => setTimeout(r, delay));
        seen.push(`${name}-`);
      });
    await Promise.all([write('a', 20), write('b', 1), write('c', 5)]);
    assert.deepEqual(seen, ['a+', 'a-', 'b+', 'b-', 'c+', 'c-']);
  });

  it('a failed write rejects its own promise (never swallowed); the next write still runs', async () => {
    const q = new WriteQueue();
    const seen: string[] = [];
    const failed = q.push(async () => {
      await tick();
      throw new Error('ENOSPC: no space left on device');
    });
    const next = q.push(async () => {
      seen.push('next');
    });
    await assert.rejects(failed, /ENOSPC/);
    await next;
    assert.deepEqual(seen, ['next']);
  });

  it('flush waits for every write queued so far and resolves even after a failure', async () => {
    const q = new WriteQueue();
    const seen: string[] = [];
    q.push(async () => {
      await tick();
      throw new Error('EIO');
    }).catch(() => seen.push('caller saw EIO'));
    q.push(async () => {
      await tick();
      seen.push('written');
    });
    await q.flush();
    assert.deepEqual(seen, ['caller saw EIO', 'written']);
  });
});
