#!/usr/bin/env node
// A stub Claude Code CLI for parallel-lane tests and the lanes bench (issue 19). It finds the story id in its prompt
// (the last argument, "Story <id>: …"), reads what to do for that story from $LANE_STUB_PLAN (JSON: id → step), logs
// `start <id> <ms>` / `end <id> <ms>` lines to $LANE_STUB_LOG, does the step in its cwd (the lane's worktree), and
// prints a stream-json result with `<quantum>STORY_PASSED</quantum>` (or STORY_FAILED).
// A step: { write: {path: text}, commit: bool (default true), waitFor: [ids whose start must be logged first],
//           sleepMs: n, hang: bool (sleeps silently until killed), waitForFile: path (after its writes, logs
//           `wait <id> <pid>`, waits until that file exists, logs `found <id>`), waitForGone: path (then waits
//           until that file does not exist, logs `gone <id>`; both paths relative to its cwd, `${RALPH_RUN_ID}` the
//           run's id), fail: bool, seeFile: path (logs whether it exists),
//           ask: text (while the prompt holds no answer: asks `<question>text</question>` and does nothing else; with
//           the answer in the prompt, logs `answer <id> <first line of the answer>` and does the step),
//           holdRunRecord: state root (after its output, waits until that output is in the run's raw streams under
//           the state root, i.e. the engine has read it, then removes the lock of its run's run.json in its cwd,
//           `.ralph/runs/$RALPH_RUN_ID/run.json.lock`, which the test took when the agent started: the engine reads the
//           output while it waits to record the agent in run.json; logs `held <id> read|not read locked|free`) }.
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const prompt = process.argv[process.argv.length - 1] || '';
const m = /Story (\S+):/.exec(prompt);
const id = m ? m[1] : '?';
const plan = process.env.LANE_STUB_PLAN ? JSON.parse(fs.readFileSync(process.env.LANE_STUB_PLAN, 'utf8')) : {};
const step = plan[id] || {};
const log = process.env.LANE_STUB_LOG;
const note = (line) => {
  if (log) fs.appendFileSync(log, `${line}\n`);
};
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const logged = () => (log && fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '');
// holdRunRecord: the lock is a directory (proper-lockfile, as the store takes it); the engine waits while it exists.
const runLock = step.holdRunRecord
  ? path.resolve('.ralph', 'runs', process.env.RALPH_RUN_ID || '?', 'run.json.lock')
  : null;
const nonce = `${id}-${process.pid}-${Date.now()}`;
/** Prints the stream-json lines of `text`, then (holdRunRecord) waits until the engine has read them and removes the lock. */
const reply = (text) => {
  process.stdout.write(
    JSON.stringify({
      type: 'assistant',
      message: {
        id: `m-${nonce}`,
        role: 'assistant',
        content: [{ type: 'text', text }],
        usage: { input_tokens: 100, output_tokens: 10 },
      },
    }) + '\n',
  );
  process.stdout.write(
    JSON.stringify({
      type: 'result',
      subtype: 'success',
      is_error: false,
      result: text,
      num_turns: 1,
      total_cost_usd: 0.01,
      usage: { input_tokens: 100, output_tokens: 10 },
      session_id: nonce,
    }) + '\n',
  );
  if (!runLock) return;
  // The engine writes each chunk to the raw stream (runFiles.ts IterationStreamWriter) from the same callback that
  // parses it: both lines there means both were parsed.
  const dir = path.join(step.holdRunRecord, '.ralph', 'runs', process.env.RALPH_RUN_ID || '?');
  const seen = () =>
    fs
      .readdirSync(dir)
      .filter((f) => f.startsWith('iter-'))
      .some((f) => fs.readFileSync(path.join(dir, f), 'utf8').includes(`"session_id":"${nonce}"`));
  const until = Date.now() + 30000;
  while (!seen() && Date.now() < until) sleep(20);
  note(`held ${id} ${seen() ? 'read' : 'not read'} ${fs.existsSync(runLock) ? 'locked' : 'free'}`);
  fs.rmSync(runLock, { recursive: true, force: true });
};

note(`start ${id} ${Date.now()}`);
if (step.ask) {
  const answered = /The answer:\n\n([^\n]*)/.exec(prompt);
  if (!answered) {
    reply(`<question>${step.ask}</question>`);
    note(`asked ${id}`);
    process.exit(0);
  }
  note(`answer ${id} ${answered[1]}`);
}
if (step.seeFile) note(`see ${id} ${step.seeFile} ${fs.existsSync(step.seeFile) ? 'yes' : 'no'}`);
for (const other of step.waitFor || []) {
  const until = Date.now() + 30000;
  while (!logged().includes(`start ${other} `) && Date.now() < until) sleep(50);
  note(`saw ${id} ${other} ${logged().includes(`start ${other} `) ? 'yes' : 'no'}`);
}
for (const [rel, text] of Object.entries(step.write || {})) {
  fs.mkdirSync(path.dirname(path.resolve(rel)), { recursive: true });
  fs.writeFileSync(rel, text);
}
if (step.write && step.commit !== false) {
  const env = {
    ...process.env,
    GIT_AUTHOR_NAME: 'stub',
    GIT_AUTHOR_EMAIL: 'stub@example.invalid',
    GIT_COMMITTER_NAME: 'stub',
    GIT_COMMITTER_EMAIL: 'stub@example.invalid',
  };
  execFileSync('git', ['add', '-A', '--', ...Object.keys(step.write)], { env });
  execFileSync('git', ['commit', '-q', '--no-verify', '-m', `${id}: ${step.subject || 'work'}`], { env });
}
// A path of a step may name the lane's run folder: `${RALPH_RUN_ID}` is this run's id; relative to the cwd.
const stepPath = (p) => path.resolve(p.replace(/\$\{RALPH_RUN_ID\}/g, process.env.RALPH_RUN_ID || '?'));
if (step.waitForFile) {
  note(`wait ${id} ${process.pid}`);
  while (!fs.existsSync(stepPath(step.waitForFile))) sleep(50);
  note(`found ${id}`);
}
if (step.waitForGone) {
  while (fs.existsSync(stepPath(step.waitForGone))) sleep(50);
  note(`gone ${id}`);
}
if (step.sleepMs) sleep(step.sleepMs);
if (step.hang) {
  note(`hang ${id} ${process.pid}`);
  for (;;) sleep(1000);
}
note(`end ${id} ${Date.now()}`);
reply(step.fail ? `could not do ${id} <quantum>STORY_FAILED</quantum>` : `${id} done <quantum>STORY_PASSED</quantum>`);
