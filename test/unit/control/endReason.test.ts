import * as assert from 'node:assert/strict';
import { endReasonText } from '../../../src/core/control/endReason';
import { emptyRunView, stateTextOf } from '../../../src/core/control/runView';

describe('an end reason in words, not a file path', () => {
  it('says a stop was requested instead of naming the STOP file', () => {
    const table: [string, string][] = [
      ['stopped by .ralph/runs/20261201T090000Z-ab12/STOP', 'stop requested (Ralph: Stop or ralph stop)'],
      ['stopped by .ralph/STOP while paused', 'stop requested while paused (Ralph: Stop or ralph stop)'],
      ['stopped by STOP', 'stop requested (Ralph: Stop or ralph stop)'],
      ['Max loops (25) reached', 'Max loops (25) reached'],
      ['stopped by the user at the door', 'stopped by the user at the door'],
    ];
    for (const [reason, words] of table) assert.equal(endReasonText(reason), words, reason);
  });

  it('is what the run view says (the dashboard header, ralph status, the tree)', () => {
    const v = {
      ...emptyRunView('r1'),
      state: 'stopped' as const,
      end: {
        state: 'stopped',
        reason: 'stopped by .ralph/runs/r1/STOP',
        completionReason: 'STOPPED',
        exitCode: 3,
        at: null,
      },
    } as Parameters<typeof stateTextOf>[0];
    assert.equal(stateTextOf(v), 'stopped — stop requested (Ralph: Stop or ralph stop)');
  });
});
