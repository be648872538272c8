import * as assert from 'node:assert/strict';
import { tempWorkspace, writeFlow, type TempWorkspace } from '../../support/workspace';
import { runCli } from '../../support/cli';

/** Issue 11: a `.flow` task file that does not parse is never dropped silently. */
describe('cli: a source with an item it cannot read is never complete', () => {
  let ws: TempWorkspace;
  afterEach(() => ws?.dispose());
  const broken = '{"id": "fn-1.2", "epic": "fn-1",\n  "title": "B" "status": "todo"}\n';
  const make = () => {
    ws = tempWorkspace('ralph-unreadable-');
    writeFlow(ws, [{ id: 'fn-1.1', status: 'done' }]);
    ws.write('.flow/tasks/fn-1.2.json', broken);
    ws.write('.ralph/config.json', JSON.stringify({ gates: { basic: 'true' } }));
  };

  it('run refuses to start, naming the file and line (not COMPLETE 1/1)', () => {
    make();
    const r = runCli(ws.dir, ['run', '--max-iterations', '1', '--trust']);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /\.flow has a file that cannot be read[^]*\.flow\/tasks\/fn-1\.2\.json:2:\d+: invalid JSON/);
    assert.doesNotMatch(r.stdout, /COMPLETE/);
    assert.equal(ws.read('.flow/tasks/fn-1.2.json'), broken);
  });

  it('next reports it (not "none")', () => {
    make();
    const r = runCli(ws.dir, ['next']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /\.flow\/tasks\/fn-1\.2\.json:2:\d+: invalid JSON/);
  });

  it('status reports it and says the source is not complete', () => {
    make();
    const r = runCli(ws.dir, ['status']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /Progress: 1\/1 \(\+1 unreadable item file: not complete/);
    assert.match(r.stdout, /Problem: \.flow\/tasks\/fn-1\.2\.json:2:\d+: invalid JSON/);
    assert.equal(runCli(ws.dir, ['status', '--json']).json().unreadable_items, 1);
  });

  it('an epic file that does not parse is not "no task is ready": run refuses, next and status name it', () => {
    ws = tempWorkspace('ralph-unreadable-epic-');
    writeFlow(ws, [{ id: 'fn-1.1', status: 'todo' }]);
    const epic = '{"id": "fn-1", "title": "E",\n  "status": "open" "depends_on_epics": []}\n';
    ws.write('.flow/epics/fn-1.json', epic);
    ws.write('.ralph/config.json', JSON.stringify({ gates: { basic: 'true' } }));
    const run = runCli(ws.dir, ['run', '--max-iterations', '1', '--trust']);
    assert.equal(run.code, 1, run.stdout + run.stderr);
    assert.match(run.stderr, /\.flow has a file that cannot be read[^]*\.flow\/epics\/fn-1\.json:2:\d+: invalid JSON/);
    const next = runCli(ws.dir, ['next']);
    assert.equal(next.code, 1);
    assert.match(next.stderr, /\.flow\/epics\/fn-1\.json:2:\d+: invalid JSON/);
    const status = runCli(ws.dir, ['status']);
    assert.match(status.stdout, /\(\+1 unreadable item file: not complete/);
    assert.match(status.stdout, /Problem: \.flow\/epics\/fn-1\.json:2:\d+: invalid JSON/);
    assert.equal(ws.read('.flow/epics/fn-1.json'), epic);
  });
});
