import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runNotify } from '../../../src/core/loop/notify';
import { processGroupAlive } from '../../../src/core/process/processGroup';
import { tempWorkspace, type TempWorkspace } from '../../support/workspace';

/** Issue 9 `notify`: the event JSON on stdin, a one-line summary in RALPH_NOTIFY_TEXT, notifyTimeoutMs, failures as results. */
describe('runNotify: the notify command', function () {
  this.timeout(20_000);
  let ws: TempWorkspace;
  beforeEach(() => {
    ws = tempWorkspace('ralph-notify-');
  });
  afterEach(() => ws.dispose());

  it('gets the payload as JSON on stdin and the summary on one line in RALPH_NOTIFY_TEXT, in the workspace folder', async () => {
    const r = await runNotify(
      'cat > stdin.json; printf %s "$RALPH_NOTIFY_TEXT" > text.txt; pwd > cwd.txt',
      { runId: 'r1', event: { type: 'question', text: 'Q?' } },
      'Ralph run r1: question\non two lines',
      { cwd: ws.dir, timeoutMs: 5000 },
    );
    assert.deepEqual(r, { ok: true });
    assert.deepEqual(JSON.parse(ws.read('stdin.json')), { runId: 'r1', event: { type: 'question', text: 'Q?' } });
    assert.equal(ws.read('text.txt'), 'Ralph run r1: question on two lines');
    assert.equal(fs.realpathSync(ws.read('cwd.txt').trim()), fs.realpathSync(ws.dir));
  });

  it('a failing command is a result with its exit code and the last line of its stderr, never a rejection', async () => {
    assert.deepEqual(
      await runNotify('echo first >&2; echo webhook refused >&2; exit 3', {}, 't', { cwd: ws.dir, timeoutMs: 5000 }),
      { ok: false, detail: 'exit 3: webhook refused' },
    );
  });

  it('a command that does not read its stdin is fine', async () => {
    assert.deepEqual(await runNotify('true', { big: 'x'.repeat(1 << 20) }, 't', { cwd: ws.dir, timeoutMs: 5000 }), {
      ok: true,
    });
  });

  it('past notifyTimeoutMs its whole process group is ended and the result says it timed out', async () => {
    const pidFile = path.join(ws.dir, 'group.pid');
    const r = await runNotify(`echo $$ > '${pidFile}'; sleep 30 & wait`, {}, 't', { cwd: ws.dir, timeoutMs: 300 });
    assert.deepEqual(r, { ok: false, detail: 'timed out after 300 ms' });
    // The shell leads its own group (detached): no member of it (the background sleep included) is left running.
    const group = Number(fs.readFileSync(pidFile, 'utf8'));
    for (let i = 0; i < 50 && processGroupAlive(group); i++) await new Promise((res) => setTimeout(res, 20));
    assert.equal(processGroupAlive(group), false, "the command's own child is ended too");
  });
});
