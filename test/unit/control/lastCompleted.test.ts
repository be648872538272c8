import * as assert from 'node:assert/strict';
import { buildStatus } from '../../../src/core/control/status';
import { completeItem } from '../../../src/core/sources/operations';
import { quantumJson, tempWorkspace, writeFlow, type TempWorkspace } from '../../support/workspace';

const at = (iso: string) => () => Date.parse(iso);

describe('control: status last_completed', () => {
  let ws: TempWorkspace;
  afterEach(() => ws?.dispose());

  it('a story passed with task done is the last completed item, at the time it passed', async () => {
    ws = tempWorkspace('ralph-last-');
    ws.write(
      'quantum.json',
      quantumJson([
        { id: 'US-001', status: 'in_progress' },
        { id: 'US-002', status: 'passed' },
      ]),
    );
    await completeItem('US-001', { folder: ws.dir, actor: 't', now: at('2026-03-01T12:00:00.000Z') });
    assert.deepEqual(buildStatus(ws.dir).last_completed, {
      source: 'quantum',
      id: 'US-001',
      title: 'Story US-001',
      at: '2026-03-01T12:00:00.000Z',
    });
  });

  const newest: { name: string; storyAt: string; expectedId: string }[] = [
    {
      name: 'a story that passed after the last flow task was done is the last completed item',
      storyAt: '2026-03-02T00:00:00.000Z',
      expectedId: 'US-001',
    },
    {
      name: 'a flow task done after the last story passed is the last completed item',
      storyAt: '2026-01-01T00:00:00.000Z',
      expectedId: 'fn-1.1',
    },
  ];
  for (const c of newest) {
    it(c.name, async () => {
      ws = tempWorkspace('ralph-last-');
      writeFlow(ws, [{ id: 'fn-1.1', status: 'done', extra: { updated_at: '2026-02-01T00:00:00.000000Z' } }]);
      ws.write('quantum.json', quantumJson([{ id: 'US-001', status: 'in_progress' }]));
      await completeItem('US-001', { folder: ws.dir, actor: 't', now: at(c.storyAt) });
      assert.equal(buildStatus(ws.dir).last_completed?.id, c.expectedId);
    });
  }

  it('a story quantum-loop passed is dated by its story_passed progress entry', () => {
    ws = tempWorkspace('ralph-last-');
    ws.write(
      'quantum.json',
      quantumJson([{ id: 'US-001', status: 'passed' }], {
        progress: [
          {
            timestamp: '2026-03-01T00:00:00Z',
            iteration: 1,
            storyId: 'US-001',
            action: 'story_passed',
            details: '',
            filesChanged: [],
            learnings: '',
          },
        ],
      }),
    );
    assert.equal(buildStatus(ws.dir).last_completed?.at, '2026-03-01T00:00:00Z');
  });
});
