import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { EngineEvent } from '../../src/core/loop/events';
import { bash, edit, say, startModelServer, write } from '../support/modelServer';
import { runCliAsync } from '../support/cli';
import { runEngine, useWorkspaces, type Workspace } from '../support/engineHarness';

type Q = Extract<EngineEvent, { type: 'question' }>;

function finish(ws: Workspace) {
  return [
    write(ws.file('db.txt'), 'sqlite\n'),
    edit(ws.file('RALPH_TASK.md'), '- [ ] Pick the database', '- [x] Pick the database'),
    bash('git add db.txt RALPH_TASK.md && git commit -q -m "feat: database"'),
    say('Done with SQLite.'),
  ];
}

describe('questions for a human (real claude CLI)', function () {
  this.timeout(120_000);
  const make = useWorkspaces();

  it('a <question> makes the item wait without spending iterations; ralph answer lets it go on with both in the prompt; notify hears the question and the end', async () => {
    const ws = make({ 'RALPH_TASK.md': '- [ ] Pick the database\n' });
    const notifyLog = path.join(ws.root, 'notify.jsonl');
    const notifyText = path.join(ws.root, 'notify.txt');
    let requestsAtQuestion = -1;
    let requestsBeforeAnswer = -1;
    let answered: Promise<unknown> | undefined;
    const server = await startModelServer([say('I need a decision first.\n<question>Postgres or SQLite?</question>'), ...finish(ws)]);
    const run = await runEngine(ws, [], {
      server,
      config: { gates: { basic: 'test -f db.txt' }, notify: `cat >> '${notifyLog}'; echo "$RALPH_NOTIFY_TEXT" >> '${notifyText}'` },
      onEvent: (e) => {
        if (e.type !== 'question') return;
        answered = (async () => {
          requestsAtQuestion = server.agentRequests().length;
          await new Promise((r) => setTimeout(r, 2500));
          requestsBeforeAnswer = server.agentRequests().length;
          const r = await runCliAsync(ws.dir, ['answer', '--json', 'SQLite,', 'in', 'data/app.db']);
          assert.equal(r.code, 0, r.stdout + r.stderr);
          assert.match(JSON.stringify(JSON.parse(r.stdout)), /"success":true,"run":"[^"]+","question":"q1","item":"[^"]+"/);
        })();
      },
    });
    await answered;
    await server.close();
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    assert.equal(run.result.iterations, 2, 'the wait spent no iteration');
    assert.equal(requestsBeforeAnswer, requestsAtQuestion, 'no agent request while waiting');
    const q = run.events.find((e): e is Q => e.type === 'question')!;
    assert.equal(q.text, 'Postgres or SQLite?');
    assert.equal(q.item?.title, 'Pick the database');
    assert.deepEqual(run.events.filter((e) => e.type === 'answered').map((e) => (e as { text: string }).text), ['SQLite, in data/app.db']);
    assert.equal(fs.readFileSync(q.answerFile, 'utf8'), 'SQLite, in data/app.db\n');
    const second = run.prompts()[1]!;
    assert.match(second, /You asked:\n\nPostgres or SQLite\?\n\nThe answer:\n\nSQLite, in data\/app\.db\n/);
    assert.equal(attemptFailures(run.events), 0, 'a question is not a failed attempt');
    const notified = fs.readFileSync(notifyLog, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { runId: string; event: EngineEvent });
    assert.deepEqual(notified.map((n) => n.event.type), ['question', 'runEnded']);
    assert.equal((notified[0]!.event as Q).text, 'Postgres or SQLite?');
    assert.match(fs.readFileSync(notifyText, 'utf8'), /question on .*Postgres or SQLite\?\n.*completed/);
  });

  it('a plain question (no writes, ends with "?") waits too, and an answer written to the answer file lets it go on', async () => {
    const ws = make({ 'RALPH_TASK.md': '- [ ] Pick the database\n' });
    const run = await runEngine(ws, [say('I looked at the code.\n\nShould the app use Postgres or SQLite?'), ...finish(ws)], {
      config: { gates: { basic: 'test -f db.txt' }, notify: 'exit 3', notifyTimeoutMs: 5000 },
      onEvent: (e) => {
        if (e.type === 'question') setTimeout(() => { fs.mkdirSync(path.dirname(e.answerFile), { recursive: true }); fs.writeFileSync(e.answerFile, 'SQLite\n'); }, 500);
      },
    });
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    const q = run.events.find((e): e is Q => e.type === 'question')!;
    assert.equal(q.text, 'Should the app use Postgres or SQLite?');
    assert.match(run.prompts()[1]!, /The answer:\n\nSQLite\n/);
    // A notify command that fails is reported, never fails the run.
    assert.ok(run.events.some((e) => e.type === 'notified' && !e.ok && /exit 3/.test(e.detail ?? '')), JSON.stringify(run.events.filter((e) => e.type === 'notified')));
  });
});

function attemptFailures(events: EngineEvent[]): number {
  return events.filter((e) => e.type === 'attemptFailed').length;
}
