import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cliPath, runCli } from '../../support/cli';
import { makeWorkspace, type Workspace } from '../../support/engineHarness';
import { processesWithEnvironment, waitForFile, waitUntil } from '../../support/processes';
import { baselineMirrorDir } from '../../../src/core/loop/baselineMirror';

/**
 * Issue 11 "every exit", breaker-s5 07/08/34/35: a `ralph run` process is SIGKILLed (a crash) while its agent has
 * ticked another box and tampered with the run record; the mirror of the claim baseline in the user's state folder
 * is the truth until settled, so `ralph status` lists the claim and the next run puts it back. A fake agent script
 * (the claude stream-json a real run would print) does the attack, as the breaker's lib.sh does.
 */
const TASK = '# Task\n## Success criteria\n- [ ] First box\n- [ ] Second box\n';

/**
 * The fake agent: iteration 1 ticks box 2, waits until run.json records it (the engine's write after the spawn),
 * runs `tamper` (bash), touches `$T/ready` and runs `after`; later ones do nothing.
 */
function agentScript(t: string, tamper: string, after: string): string {
  return [
    '#!/bin/bash',
    `T='${t}'`,
    'N=$(( $(cat "$T/n" 2>/dev/null || echo 0) + 1 )); echo $N > "$T/n"',
    'emit() { printf "%s\\n" "{\\"type\\":\\"system\\",\\"subtype\\":\\"init\\",\\"session_id\\":\\"s$N\\",\\"model\\":\\"claude-sonnet-4-5\\",\\"tools\\":[],\\"cwd\\":\\"$PWD\\"}" "{\\"type\\":\\"result\\",\\"subtype\\":\\"success\\",\\"is_error\\":false,\\"result\\":\\"done\\",\\"num_turns\\":1,\\"total_cost_usd\\":0.01,\\"usage\\":{\\"input_tokens\\":100,\\"output_tokens\\":10}}"; }',
    'exec 3>&1',
    'if [ $N = 1 ]; then',
    '  sed -i "s/^- \\[ \\] Second box\\$/- [x] Second box/" RALPH_TASK.md',
    '  R=.ralph/runs/$RALPH_RUN_ID/run.json',
    // The engine records the agent in run.json just after the spawn; tampering before that write is done races it
    // (the engine then fails the run and puts the tick back itself: no crash left to recover, the case under test).
    '  i=0; until grep -q \'"agentPgid": [0-9]\' "$R" 2>/dev/null || [ $i -ge 200 ]; do sleep 0.05; i=$((i+1)); done',
    `  ${tamper}`,
    '  touch "$T/ready"',
    `  ${after}`,
    'fi >>"$T/agent.log" 2>&1',
    'emit',
    '',
  ].join('\n');
}

interface Crash {
  ws: Workspace;
  t: string;
  env: NodeJS.ProcessEnv;
}

/** Starts `ralph run` with the fake agent, waits until the agent is ready, SIGKILLs the runner. */
async function crashRun(tamper: string, after = 'sleep 30', containment?: 'marker'): Promise<Crash> {
  const ws = makeWorkspace({ 'RALPH_TASK.md': TASK });
  const t = path.join(ws.root, 't');
  fs.mkdirSync(t);
  const agent = path.join(t, 'agent.sh');
  fs.writeFileSync(agent, agentScript(t, tamper, after), { mode: 0o755 });
  ws.write(
    '.ralph/config.json',
    JSON.stringify({
      claudePath: agent,
      gates: { basic: 'false', final: 'false' },
      timing: { betweenIterationsMs: 0, killGraceMs: 500 },
      ...(containment ? { containment } : {}),
    }),
  );
  const env: NodeJS.ProcessEnv = { ...process.env, XDG_STATE_HOME: path.join(ws.root, 'state'), FLOW_ACTOR: 'tester' };
  for (const k of ['RALPH_TRUST', 'RALPH_ITERATION_TOKEN', 'RALPH_RUN_ID', 'RALPH_WORKSPACE']) delete env[k];
  const child = spawn(process.execPath, [cliPath, '-C', ws.dir, 'run', '--trust', '--max-iterations', '1'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => {
    out += String(d);
  });
  child.stderr.on('data', (d) => {
    out += String(d);
  });
  const exited = new Promise((r) => child.once('exit', r));
  // The runner exiting before the agent is ready is a failure of its own: say so with its output.
  const ready = path.join(t, 'ready');
  await Promise.race([
    waitForFile(ready),
    exited.then(() => assert.ok(fs.existsSync(ready), `ralph run ended before the agent got ready:\n${out}`)),
  ]);
  // The agent has ticked, tampered and touched `ready`: the runner dies at this moment, as in a crash.
  child.kill('SIGKILL');
  await exited;
  return { ws, t, env };
}

/** `ralph status --json` after the crash, then the next `ralph run` (its agent does nothing); both answers. */
async function afterCrash(c: Crash): Promise<{ status: Record<string, unknown>; next: string }> {
  const status = runCli(c.ws.dir, ['status', '--json'], c.env).json();
  const next = runCli(c.ws.dir, ['run', '--trust', '--max-iterations', '1'], c.env);
  return { status, next: next.stdout + next.stderr };
}

describe('crash recovery trusts the baseline mirror, not the run record (issue 11, breaker-s5 07/08/34/35)', function () {
  this.timeout(180_000);
  let c: Crash | undefined;
  afterEach(() => {
    if (!c) return;
    // What is still running with this workspace in its environment is ours (a failing 35): ended before cleanup.
    for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid)) {
      try {
        if (fs.readFileSync(`/proc/${pid}/environ`, 'latin1').includes(c.ws.root)) process.kill(Number(pid), 'SIGKILL');
      } catch {
        // gone, or not ours to read
      }
    }
    c.ws.cleanup();
    c = undefined;
  });

  const cases: [string, string][] = [
    [
      '07: the agent changed run.json runId (the record is skipped)',
      "node -e \"const f=process.argv[1],fs=require('fs');const j=JSON.parse(fs.readFileSync(f,'utf8'));j.runId='x'+j.runId;fs.writeFileSync(f,JSON.stringify(j,null,2))\" \"$R\"",
    ],
    [
      '08: the agent marked its run completed (its pid one that lives)',
      "node -e \"const f=process.argv[1],fs=require('fs');const j=JSON.parse(fs.readFileSync(f,'utf8'));Object.assign(j,{pid:1,state:'completed',endedAt:new Date().toISOString(),completion:{reason:'COMPLETE',at:new Date().toISOString()},claimBaseline:null});fs.writeFileSync(f,JSON.stringify(j,null,2))\" \"$R\"",
    ],
    ['34: the agent deleted its run folder (the mirror is intact)', 'rm -rf ".ralph/runs/$RALPH_RUN_ID"'],
  ];
  for (const [name, tamper] of cases) {
    it(`${name}: status lists the claim, the next run puts it back and removes the mirror`, async () => {
      // The engine's rule where the kernel does not keep the run folder read-only (marker: no namespaces); with them
      // the tamper fails with EROFS (test/component/process/protectedPaths.test.ts).
      c = await crashRun(tamper, undefined, 'marker');
      assert.match(c.ws.read('RALPH_TASK.md'), /- \[x\] Second box/, 'the crash left the tick (the case to recover)');
      const { status, next } = await afterCrash(c);
      assert.deepEqual(
        (status.unverified_claims as { id: string }[]).map((u) => u.id),
        ['RALPH_TASK.md:4'],
        JSON.stringify(status),
      );
      assert.equal(status.progress, '0/2');
      assert.match(c.ws.read('RALPH_TASK.md'), /- \[ \] Second box/, next);
      assert.match(next, /put back RALPH_TASK\.md:4/);
      assert.deepEqual(fs.readdirSync(baselineMirrorDir(c.ws.dir, c.env)), [], 'every mirror settled and removed');
      assert.equal(runCli(c.ws.dir, ['status', '--json'], c.env).json().progress, '0/2');
    });
  }

  it('35: the agent does not outlive the SIGKILLed runner (it would tamper once its stdout pipe breaks)', async () => {
    // Nothing is tampered with while the runner lives: the agent waits for its pipe to break, then deletes its run folder.
    const after =
      'trap "" PIPE; i=0; while [ $i -lt 300 ] && printf "{\\"type\\":\\"keepalive\\"}\\n" >&3 2>/dev/null; do sleep 0.1; i=$((i+1)); done; rm -rf ".ralph/runs/$RALPH_RUN_ID"; touch "$T/tampered-after-crash"';
    c = await crashRun(':', after);
    // Every process of the run carries the workspace in its environment (XDG_STATE_HOME): wait until none is left.
    // An agent that outlived the runner would tamper when its loop ends (30 s) and then exit, failing below.
    const root = c.ws.root;
    await waitUntil(() => processesWithEnvironment(root).length === 0);
    assert.equal(
      fs.existsSync(path.join(c.t, 'tampered-after-crash')),
      false,
      'the agent lived on after the runner died and tampered',
    );
    const { status, next } = await afterCrash(c);
    assert.deepEqual(
      (status.unverified_claims as { id: string }[]).map((u) => u.id),
      ['RALPH_TASK.md:4'],
      JSON.stringify(status),
    );
    assert.match(c.ws.read('RALPH_TASK.md'), /- \[ \] Second box/, next);
  });
});
