import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cliPath, runCli } from '../../support/cli';
import { isPidAlive } from '../../../src/core/process/processGroup';
import { processesRunning, waitForFile, waitUntil } from '../../support/processes';
import { shellStub } from '../../support/stubs/installStubs';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

const TASK = '- [ ] One\n- [ ] Two\n';

/**
 * Issue 11 "No exit path leaves an unverified claim behind", through `ralph run` processes: a small fake agent
 * (a shell script set as `claudePath`) ticks **another** box while the gate is red, then the run ends by one Ctrl-C,
 * SIGTERM, SIGHUP, or an engine error (the agent breaks its own run.json, so the engine's next write of it throws).
 * After the process exits — with no next run to recover anything — the box is unticked, the activity says so, and
 * `ralph status` counts nothing done and lists nothing unverified. (Ctrl-C twice, a crash and SIGKILL are in
 * truth.real.test.ts and crashMirror.cli.test.ts; a cap in truth.real.test.ts; STOP / cancel in engineControl.real.)
 */
describe('cli: every exit of ralph run puts back what the agent claimed (issue 11)', function () {
  this.timeout(90_000);
  let t: TempFolder;
  let bin: string | undefined;
  afterEach(() => {
    for (const pid of processesRunning('sleep 6073')) if (isPidAlive(pid)) process.kill(pid, 'SIGKILL');
    if (bin) fs.rmSync(bin, { recursive: true, force: true });
    bin = undefined;
    t.dispose();
  });

  /** A workspace whose agent runs `body` after ticking box Two (and touching `ticked`); the basic gate is `false`. */
  function workspace(body: string, containment?: 'marker'): { ws: string; env: NodeJS.ProcessEnv } {
    t = makeTempFolder('ralph-exit-', { ralphDir: true });
    const ws = t.file('ws');
    bin = shellStub(
      'claude',
      [
        'if [ "$1" = "--version" ]; then echo "9.9.9 (Claude Code)"; exit 0; fi',
        `sed -i 's/- \\[ \\] Two/- [x] Two/' RALPH_TASK.md`,
        'touch ticked',
        body,
      ].join('\n'),
    );
    t.write('ws/RALPH_TASK.md', TASK);
    t.write(
      'ws/.ralph/config.json',
      JSON.stringify({
        claudePath: path.join(bin, 'claude'),
        gates: { basic: 'false' },
        timing: { betweenIterationsMs: 50, killGraceMs: 1000 },
        ...(containment ? { containment } : {}),
      }),
    );
    return {
      ws,
      env: { ...process.env, RALPH_TRUST: '1', XDG_STATE_HOME: t.file('state'), XDG_CACHE_HOME: t.file('cache') },
    };
  }

  async function run(
    ws: string,
    env: NodeJS.ProcessEnv,
    during?: (child: ReturnType<typeof spawn>) => Promise<void>,
  ): Promise<{ code: number | null; out: string }> {
    const child = spawn(process.execPath, [cliPath, '-C', ws, 'run'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d) => {
      out += String(d);
    });
    child.stderr!.on('data', (d) => {
      out += String(d);
    });
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    if (during) {
      const ticked = path.join(ws, 'ticked');
      await Promise.race([
        waitForFile(ticked),
        exited.then(() => assert.ok(fs.existsSync(ticked), `ralph run ended before the agent ticked the box:\n${out}`)),
      ]);
      await during(child);
    }
    const code = await exited;
    clearTimeout(timer);
    return { code, out };
  }

  /** The run record of the folder's one run names the agent's process group (the engine's write after the spawn). */
  function agentRecorded(ws: string): boolean {
    const runs = path.join(ws, '.ralph', 'runs');
    if (!fs.existsSync(runs)) return false;
    return fs.readdirSync(runs).some((id) => {
      try {
        return /"agentPgid": \d/.test(fs.readFileSync(path.join(runs, id, 'run.json'), 'utf8'));
      } catch {
        return false; // not written yet
      }
    });
  }

  function assertNothingClaimed(ws: string, env: NodeJS.ProcessEnv, out: string, how: RegExp): void {
    assert.equal(
      fs.readFileSync(path.join(ws, 'RALPH_TASK.md'), 'utf8'),
      TASK,
      `the unverified tick survived the exit:\n${out}`,
    );
    assert.match(
      out,
      /PUT BACK RALPH_TASK\.md:2 — Two: the agent claimed it done; the run ended \w+ before a gate verified it/,
    );
    assert.match(out, how);
    const status = runCli(ws, ['status', '--json'], env).json() as { progress: string; unverified_claims?: unknown[] };
    assert.equal(status.progress, '0/2');
    assert.deepEqual(status.unverified_claims ?? [], []);
  }

  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    it(`${sig === 'SIGINT' ? 'one Ctrl-C (SIGINT)' : sig} during the iteration: the box the agent ticked is unticked before ralph run exits 130`, async () => {
      const { ws, env } = workspace('exec sleep 6073');
      const r = await run(ws, env, async (child) => {
        // During the iteration: the agent is its `sleep` now, and the run record names its process group.
        await waitUntil(() => processesRunning('sleep 6073').length > 0 && agentRecorded(ws));
        child.kill(sig);
      });
      assert.equal(r.code, 130, r.out);
      assertNothingClaimed(ws, env, r.out, new RegExp(`${sig}: ending the agent and stopping`));
    });
  }

  it('an engine error (the agent broke its run.json, so the engine cannot write it): the box is unticked and the run ends failed', async () => {
    const { ws, env } = workspace(
      [
        `printf '{ not json' > ".ralph/runs/$RALPH_RUN_ID/run.json"`,
        `echo '{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":0,"usage":{"input_tokens":1,"output_tokens":1}}'`,
      ].join('\n'),
      // The engine's own rule where the kernel does not keep the run folder read-only; with the protected mounts the
      // agent's write fails with EROFS (test/component/process/protectedPaths.test.ts).
      'marker',
    );
    const r = await run(ws, env);
    assert.equal(r.code, 1, r.out);
    assertNothingClaimed(ws, env, r.out, /FAILED — engine error: \.ralph\/runs\/[^/]+\/run\.json:1:\d+: invalid JSON/);
  });
});
