import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { EngineEvent } from '../../src/core/loop/events';
import { bash, edit, say, startModelServer, write } from '../support/modelServer';
import { runCliAsync } from '../support/cli';
import { runEngine, useWorkspaces, type Workspace } from '../support/engineHarness';
import { scriptedClaudeStub } from '../support/claude';

/**
 * The loop's own rules run the agent's light stand-in (test/support/stubs/scriptedClaude.cjs: the same model server
 * and tools); a test without `stub` runs the real claude CLI.
 */
const stub = { claudePath: scriptedClaudeStub };

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
    const server = await startModelServer([
      say('I need a decision first.\n<question>Postgres or SQLite?</question>'),
      ...finish(ws),
    ]);
    const run = await runEngine(ws, [], {
      server,
      config: {
        gates: { basic: 'test -f db.txt' },
        notify: `cat >> '${notifyLog}'; echo "$RALPH_NOTIFY_TEXT" >> '${notifyText}'`,
      },
      onEvent: (e) => {
        if (e.type !== 'question') return;
        answered = (async () => {
          requestsAtQuestion = server.agentRequests().length;
          await new Promise((r) => setTimeout(r, 2500));
          requestsBeforeAnswer = server.agentRequests().length;
          const r = await runCliAsync(ws.dir, ['answer', '--json', 'SQLite,', 'in', 'data/app.db']);
          assert.equal(r.code, 0, r.stdout + r.stderr);
          const j = JSON.parse(r.stdout) as { success: boolean; run: string; question: string; item: string };
          assert.deepEqual(
            [j.success, j.question, typeof j.run, typeof j.item],
            [true, 'q1', 'string', 'string'],
            r.stdout,
          );
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
    assert.deepEqual(
      run.events.filter((e) => e.type === 'answered').map((e) => (e as { text: string }).text),
      ['SQLite, in data/app.db'],
    );
    assert.equal(fs.readFileSync(q.answerFile, 'utf8'), 'SQLite, in data/app.db\n');
    const second = run.prompts()[1]!;
    assert.match(second, /You asked:\n\nPostgres or SQLite\?\n\nThe answer:\n\nSQLite, in data\/app\.db\n/);
    assert.equal(attemptFailures(run.events), 0, 'a question is not a failed attempt');
    const notified = fs
      .readFileSync(notifyLog, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { runId: string; event: EngineEvent });
    assert.deepEqual(
      notified.map((n) => n.event.type),
      ['question', 'runEnded'],
    );
    assert.equal((notified[0]!.event as Q).text, 'Postgres or SQLite?');
    assert.match(fs.readFileSync(notifyText, 'utf8'), /question on .*Postgres or SQLite\?\n.*completed/);
  });

  it('a plain question (no writes, ends with "?") waits too, and an answer written to the answer file lets it go on', async () => {
    const ws = make({ 'RALPH_TASK.md': '- [ ] Pick the database\n' });
    let requestsAtQuestion = -1;
    let requestsBeforeAnswer = -1;
    let answered: Promise<unknown> | undefined;
    const server = await startModelServer([
      say('I looked at the code.\n\nShould the app use Postgres or SQLite?'),
      ...finish(ws),
    ]);
    const run = await runEngine(ws, [], {
      server,
      config: { ...stub, gates: { basic: 'test -f db.txt' }, notify: 'exit 3', notifyTimeoutMs: 5000 },
      onEvent: (e) => {
        if (e.type !== 'question') return;
        answered = (async () => {
          requestsAtQuestion = server.agentRequests().length;
          await new Promise((r) => setTimeout(r, 2500));
          requestsBeforeAnswer = server.agentRequests().length;
          fs.mkdirSync(path.dirname(e.answerFile), { recursive: true });
          fs.writeFileSync(e.answerFile, 'SQLite\n');
        })();
      },
    });
    await answered;
    await server.close();
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    assert.equal(run.result.iterations, 2, 'the wait spent no iteration');
    assert.equal(requestsBeforeAnswer, requestsAtQuestion, 'no agent request while waiting');
    assert.equal(attemptFailures(run.events), 0, 'a question is not a failed attempt');
    const q = run.events.find((e): e is Q => e.type === 'question')!;
    assert.equal(q.text, 'Should the app use Postgres or SQLite?');
    assert.match(run.prompts()[1]!, /The answer:\n\nSQLite\n/);
    // A notify command that fails is reported, never fails the run.
    assert.ok(
      run.events.some((e) => e.type === 'notified' && !e.ok && /exit 3/.test(e.detail ?? '')),
      JSON.stringify(run.events.filter((e) => e.type === 'notified')),
    );
  });

  it('with continueOnBlocked the asking item is set aside: a second item is finished meanwhile, then ralph answer lets the first finish', async () => {
    const ws = make({ 'RALPH_TASK.md': '- [ ] Pick the database\n- [ ] Write the readme\n' });
    let answered: Promise<unknown> | undefined;
    const readme = [
      write(ws.file('README.md'), '# app\n'),
      edit(ws.file('RALPH_TASK.md'), '- [ ] Write the readme', '- [x] Write the readme'),
      bash('git add README.md RALPH_TASK.md && git commit -q -m "docs: readme"'),
      say('Readme written.'),
    ];
    const run = await runEngine(ws, [say('<question>Postgres or SQLite?</question>'), ...readme, ...finish(ws)], {
      config: { ...stub, gates: { basic: 'test -f README.md' }, continueOnBlocked: true },
      onEvent: (e) => {
        // The answer comes only after the other item was verified (the run waits a little for it in between).
        if (e.type !== 'verified' || e.item.title !== 'Write the readme') return;
        answered = (async () => {
          await new Promise((r) => setTimeout(r, 1500));
          const r = await runCliAsync(ws.dir, ['answer', 'SQLite']);
          assert.equal(r.code, 0, r.stdout + r.stderr);
        })();
      },
    });
    await answered;
    assert.equal(run.result.state, 'completed', run.lines.join('\n'));
    assert.equal(run.result.iterations, 3);
    const order = run.events.flatMap((e) =>
      e.type === 'question'
        ? [`asked ${e.item?.title}`]
        : e.type === 'iterationStarted'
          ? [`work ${e.item?.title}`]
          : e.type === 'verified'
            ? [`verified ${e.item.title}`]
            : e.type === 'answered'
              ? ['answered']
              : [],
    );
    assert.deepEqual(order, [
      'work Pick the database',
      'asked Pick the database',
      'work Write the readme',
      'verified Write the readme',
      'answered',
      'work Pick the database',
      'verified Pick the database',
    ]);
    const prompts = run.prompts();
    assert.doesNotMatch(prompts[1]!, /You asked:/, 'the other item gets no answer');
    assert.match(prompts[2]!, /You asked:\n\nPostgres or SQLite\?\n\nThe answer:\n\nSQLite\n/);
    assert.equal(attemptFailures(run.events), 0);
    assert.match(
      fs.readFileSync(ws.file('RALPH_TASK.md'), 'utf8'),
      /- \[x\] Pick the database\n- \[x\] Write the readme/,
    );
  });
});

function attemptFailures(events: EngineEvent[]): number {
  return events.filter((e) => e.type === 'attemptFailed').length;
}
