import * as assert from 'node:assert/strict';
import { runCli } from '../../support/cli';
import { quantumJson, tempWorkspace, type TempWorkspace } from '../../support/workspace';

describe('ralph run --item (the CLI half of Start Here)', () => {
  let ws: TempWorkspace;
  beforeEach(() => {
    ws = tempWorkspace('ralph-run-item-');
    ws.write(
      'quantum.json',
      quantumJson([{ id: 'US-1', status: 'passed' }, { id: 'US-2' }, { id: 'US-3', deps: ['US-2'] }]),
    );
  });
  afterEach(() => ws.dispose());

  it('refuses an item whose dependency is open, naming why and the next ready item, and writes nothing', () => {
    const before = ws.read('quantum.json');
    const r = runCli(ws.dir, ['run', '--item', 'US-3', '--no-gates']);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(
      r.stderr.trim(),
      'ralph: Cannot start with US-3: US-3 waits on US-2 (pending). The next ready item of its source is US-2 (ralph run --item US-2).',
    );
    assert.equal(ws.read('quantum.json'), before);
  });

  it('refuses a done item and an unknown one', () => {
    assert.match(
      runCli(ws.dir, ['run', '--item', 'US-1', '--no-gates']).stderr,
      /Cannot start with US-1: US-1 is already done\. The next ready item of its source is US-2/,
    );
    assert.match(
      runCli(ws.dir, ['run', '--item', 'US-9', '--no-gates']).stderr,
      /Cannot start with US-9: no task, story or box US-9\./,
    );
  });

  it('lists --item in its help', () => {
    assert.match(runCli(ws.dir, ['run', '--help']).stdout, /--item <id>/);
  });
});
