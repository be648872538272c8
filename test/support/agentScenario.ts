import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { processGroupAlive } from '../../src/core/agents/spawn';
import type { EngineEvent } from '../../src/core/loop/events';
import { ralphRunDir } from '../../src/core/model/ralphPaths';
import { agentCliPath, type InstalledAgent } from './agentClis';
import type { AgentModelEnv } from './agentEnv';
import { type EngineRun, type Workspace, runEngine, useWorkspaces } from './engineHarness';
import {
  type ModelServer,
  type Turn,
  requestToolResults,
  requestUserTexts,
  say,
  shell,
  startModelServer,
} from './modelServer';

/**
 * The one long scenario every agent CLI goes through with the real CLI (from .agent-clis/) against the scripted model
 * server, configured through the agent's own config files (agentEnv.ts, scriptedAgentEnv.ts): the loop engine drives
 * it as `ralph run --agent <name>` does. Starts are slow (opencode and Qwen take seconds), so one test covers several
 * rules, run after run in one workspace:
 *
 * 1. a checklist task with a gate and a `[deny] git push` row in `.ralph/command-policy`: the agent ticks the box and
 *    claims COMPLETE without the work (refused: the gate fails, the box is unticked, never done); the next prompt
 *    carries the failure; the agent then pushes to the workspace's remote (the denied command: the remote never gets
 *    the branch), writes the file and passes the gate (verified, completed);
 * 2. STOP during a turn: the turn finishes, the run stops, nothing is left running;
 * 3. a note in the handoff, then a shell output over the rotation threshold: a rotation, whose next prompt carries the
 *    note; Cancel while that iteration's request is pending: nothing left running;
 * 4. (with `limit`) the agent's provider over its usage quota for an hour (past `failoverAfterMinutes`): the adapter
 *    reads the reset the CLI reports, the next iteration runs claude (`agents: [agent, claude]`) with the same task,
 *    and the run log says so.
 */
export interface AgentScenario {
  agent: InstalledAgent;
  /** Points the agent at `server` through its own config files in `home`. */
  modelEnv(home: string, server: ModelServer): AgentModelEnv;
  /**
   * How the agent keeps the `[deny]` row: `hook` (ralph's guard hook: a `guard` event, the reason reaches the model)
   * or `rules` (its own permission rules: the command is refused by the CLI).
   */
  deny: 'hook' | 'rules';
  /**
   * Where the stream has usage: `per-call` (the context is live), `per-turn` (only the turn's spend at its end: the
   * context is estimated from bytes) or `none` (estimated, and the totals stay zero).
   */
  usage: 'per-call' | 'per-turn' | 'none';
  /** Turns the agent needs before a shell command edits `file` (Qwen Code reads a file before a command edits it). */
  beforeEdit?(file: string): Turn[];
  /** The turn that writes `file` (the agent's own write tool); default a shell `printf`. */
  writeFile?(file: string, text: string): Turn;
  /**
   * The model server's answer that puts the agent over a usage limit resetting in an hour (modelServer.ts `quota429`):
   * given, the scenario ends with a failover to the real claude CLI.
   */
  limit?(): Turn;
}

/** Only a `[deny]` row: every agent keeps it (opencode and Copilot CLI with their own rules, which keep nothing else). */
const POLICY = `[deny]
git push | pushing is the operator's job
`;
const GATE = 'grep -qx hello hello.txt 2>/dev/null || { echo "FAIL: hello.txt does not say hello"; exit 1; }';
const TASK = '# Hello\n\n- [ ] Create hello.txt\n';
const TICK = `sed -i 's/- \\[ \\] Create/- [x] Create/' RALPH_TASK.md`;
const PUSH = 'git push origin HEAD:refs/heads/pushed';
/** Crosses the rotation threshold both ways: 8000 output bytes (≈ 2000 tokens estimated) and 50 000 input tokens reported. */
const ROTATE_AT = 1500;
const NOTE = 'handoff note: hello.txt is next';

const ofType = <T extends EngineEvent['type']>(events: EngineEvent[], t: T) =>
  events.filter((e): e is Extract<EngineEvent, { type: T }> => e.type === t);

/** The prompt of each iteration as the model received it: the distinct user texts that hold the task. */
export function iterationPrompts(server: ModelServer): string[] {
  return [...new Set(server.agentRequests().flatMap((r) => requestUserTexts(r)))].filter((t) => t.includes('## Task'));
}

/** No process of the run's agents is left. */
function assertNothingLeft(run: EngineRun): void {
  for (const e of ofType(run.events, 'agentStarted'))
    if (e.pid) assert.equal(processGroupAlive(e.pid), false, `agent of iteration ${e.iteration} left running`);
}

export function describeAgentScenario(s: AgentScenario): void {
  describe(`${s.agent}: the real CLI driven by the loop engine against the scripted model server`, function () {
    this.timeout(900_000);
    const make = useWorkspaces();
    let cli = '';
    before(() => {
      cli = agentCliPath(s.agent);
    });

    /** One engine run against `server`, configured the way a user points the agent at their own model server. */
    const run = (ws: Workspace, server: ModelServer, o: Parameters<typeof runEngine>[2] = {}) => {
      const m = s.modelEnv(ws.home, server);
      return runEngine(ws, [], {
        ...o,
        server,
        env: { ...m.env, ...o.env },
        config: { agent: s.agent, [`${s.agent}Path`]: cli, model: m.model, gates: { basic: 'true' }, ...o.config },
      });
    };
    const tick = (ws: Workspace): Turn[] => [...(s.beforeEdit?.(ws.file('RALPH_TASK.md')) ?? []), shell(TICK)];

    it('refuses a tick without the work, keeps the deny row, completes verified; STOP mid-turn; a rotation with its handoff, then Cancel mid-turn: nothing left running', async () => {
      const ws = make({ 'RALPH_TASK.md': TASK, '.ralph/command-policy': POLICY });
      const remote = path.join(ws.root, 'remote.git');
      execFileSync('git', ['init', '-q', '--bare', remote]);
      ws.git('remote', 'add', 'origin', remote);

      // 1. The tick without the work, refused; the retry with the failure, the denied push, the work.
      const server = await startModelServer([
        ...tick(ws),
        say('Done. <promise>COMPLETE</promise>'),
        shell(PUSH),
        s.writeFile?.(ws.file('hello.txt'), 'hello\n') ?? shell("printf 'hello\\n' > hello.txt"),
        ...tick(ws),
        say('hello.txt now says hello. <promise>COMPLETE</promise>', { usage: { input: 2000, cacheRead: 500 } }),
      ]);
      try {
        const r = await run(ws, server, { config: { guard: 'strict', gates: { basic: GATE } } });
        const log = r.lines.join('\n');
        assert.equal(r.result.state, 'completed', log);
        assert.equal(r.result.iterations, 2, log);
        assert.equal(ws.read('hello.txt'), 'hello\n');
        assert.equal(ws.read('RALPH_TASK.md'), TASK.replace('[ ]', '[x]'));
        assert.equal(ofType(r.events, 'attemptFailed').length, 1, 'the tick without the work was refused');
        assert.equal(ofType(r.events, 'verified').length, 1);
        const types = r.events.map((e) => e.type);
        assert.ok(types.indexOf('attemptFailed') < types.indexOf('verified'), log);
        const prompts = iterationPrompts(server);
        assert.equal(prompts.length, 2, prompts.join('\n----\n'));
        assert.doesNotMatch(prompts[0]!, /Previous attempt/);
        assert.match(prompts[1]!, /Previous attempt #1[\s\S]*FAIL: hello.txt does not say hello/);
        // The denied push never ran: the remote has no branch; the model was told the call was refused.
        assert.throws(
          () => execFileSync('git', ['--git-dir', remote, 'rev-parse', '--verify', '-q', 'refs/heads/pushed']),
          'the denied push reached the remote',
        );
        const results = server
          .agentRequests()
          .flatMap((q) => requestToolResults(q))
          .map((t) => t.content);
        if (s.deny === 'hook') {
          assert.ok(
            results.some((t) => /pushing is the operator's job/.test(t)),
            `the deny reason reached the agent:\n${results.join('\n---\n')}`,
          );
          assert.ok(
            ofType(r.events, 'guard').some((e) => e.decision === 'deny'),
            log,
          );
        } else {
          assert.ok(
            results.some((t) => /denied|not allowed|permission|rejected|pushing is the operator's job/i.test(t)),
            `the CLI refused the push:\n${results.join('\n---\n')}`,
          );
        }
        const ended = ofType(r.events, 'iterationEnded');
        assert.deepEqual(
          ended.map((e) => e.ending),
          ['complete', 'complete'],
        );
        if (s.usage !== 'none') {
          assert.equal(ended[1]!.totals.tokens.cacheRead, 500, 'the spend of the second iteration, from its usage');
          assert.ok(ended[1]!.totals.tokens.input >= 2000);
        } else {
          assert.deepEqual(ended[1]!.totals.tokens, { input: 0, output: 0, cacheRead: 0, cacheCreation: 0 });
        }
        if (s.usage !== 'per-call')
          assert.ok(
            ofType(r.events, 'tokens').some((t) => t.contextTokens > 0),
            'the context, estimated from bytes',
          );
        assert.equal(JSON.parse(ws.read(`.ralph/runs/${r.result.runId}/run.json`)).agent, s.agent);
        assertNothingLeft(r);
      } finally {
        await server.close();
      }

      // 2. STOP during a turn: the turn finishes (a shell call, then its answer), the run stops.
      ws.write('RALPH_TASK.md', ws.read('RALPH_TASK.md') + '- [ ] Create bye.txt\n');
      ws.git('commit', '-qam', 'one more task');
      const stopServer = await startModelServer([shell('sleep 1'), say('Stopping here.')]);
      try {
        const r = await run(ws, stopServer, {
          // The STOP grace (a silent agent ended after it) is not under test: a slow start on a loaded machine is no end.
          config: { timing: { stopGraceMs: 600_000 } },
          onEvent: (e, engine) => {
            if (e.type === 'agentStarted') fs.writeFileSync(path.join(ralphRunDir(ws.dir, engine.runId), 'STOP'), '');
          },
        });
        assert.equal(r.result.state, 'stopped', r.lines.join('\n'));
        assert.equal(ofType(r.events, 'iterationEnded')[0]!.ending, 'natural');
        assertNothingLeft(r);
      } finally {
        await stopServer.close();
      }

      // 3. A note in the handoff, then the context over the threshold: rotation; Cancel while the next turn is pending.
      // The guard holds a shell command that writes into .ralph/ (docs/guard.md): where it runs, the note goes through
      // the agent's write tool; an agent without one there (Codex: apply_patch is not scripted) leaves ralph's own part.
      const handoff = ws.file('.ralph/handoff.md');
      const noteTurns =
        s.deny === 'rules'
          ? [...(s.beforeEdit?.(handoff) ?? []), shell(`printf '%s\\n' '${NOTE}' >> .ralph/handoff.md`)]
          : s.writeFile
            ? [...(s.beforeEdit?.(handoff) ?? []), s.writeFile(handoff, `${ws.read('.ralph/handoff.md')}${NOTE}\n`)]
            : [];
      const rotateServer = await startModelServer([
        ...noteTurns,
        shell('yes x | head -c 8000', { usage: { input: 50_000 } }),
        { kind: 'hang', times: Infinity },
      ]);
      const cancel = new AbortController();
      try {
        const r = await run(ws, rotateServer, {
          config: { rotateThresholdTokens: ROTATE_AT, maxIterations: 3 },
          engine: { signal: cancel.signal },
          onEvent: (e) => {
            if (e.type === 'agentStarted' && e.iteration === 2) {
              const n = rotateServer.agentRequests().length;
              void rotateServer.waitForAgentRequests(n + 1).then(() => cancel.abort());
            }
          },
        });
        const log = r.lines.join('\n');
        assert.equal(r.result.state, 'cancelled', log);
        assert.ok(ofType(r.events, 'rotate').length === 1, log);
        assert.deepEqual(
          ofType(r.events, 'iterationEnded').map((e) => e.ending),
          ['rotation', 'cancelled'],
          log,
        );
        const prompts = iterationPrompts(rotateServer);
        assert.equal(prompts.length, 2, prompts.join('\n----\n'));
        assert.match(
          prompts[1]!,
          noteTurns.length ? new RegExp(NOTE) : /## Auto-enriched state/,
          'the next iteration starts from the handoff',
        );
        assert.equal(ofType(r.events, 'agentStarted').length, 2);
        assertNothingLeft(r);
      } finally {
        await rotateServer.close();
      }
      if (s.limit) await limitFailover(s, ws, cli);
    });
  });
}

/**
 * Step 4 of the scenario: the agent's provider is over its usage quota for an hour (`s.limit()`, past the default
 * `failoverAfterMinutes`); the next iteration runs the real claude CLI (`agents: [agent, claude]`), which creates
 * bye.txt and ticks the task's last box (`- [ ] Create bye.txt`) in `ws`.
 */
export async function limitFailover(s: AgentScenario, ws: Workspace, cli: string): Promise<void> {
  // 4. A usage limit an hour from resetting: failover to claude, whose own server answers.
  const limit = s.limit!();
  /** The reset the limit names, epoch ms (its body's `resets_at`, seconds). */
  const named = 1000 * ((limit as { body?: { error?: { resets_at?: number } } }).body?.error?.resets_at ?? NaN);
  const limited = await startModelServer([limit]);
  const claudeServer = await startModelServer([
    shell(`printf 'bye\\n' > bye.txt && sed -i 's/- \\[ \\] Create bye/- [x] Create bye/' RALPH_TASK.md`),
    say('bye.txt written. <promise>COMPLETE</promise>'),
  ]);
  try {
    const m = s.modelEnv(ws.home, limited);
    const r = await runEngine(ws, [], {
      server: claudeServer,
      env: m.env,
      config: {
        agent: s.agent,
        agents: [s.agent, 'claude'],
        [`${s.agent}Path`]: cli,
        model: m.model,
        gates: { basic: 'test -f bye.txt' },
      },
    });
    const log = r.lines.join('\n');
    assert.equal(r.result.state, 'completed', log);
    assert.deepEqual(
      ofType(r.events, 'agentStarted').map((e) => e.agent),
      [s.agent, 'claude'],
      log,
    );
    const [failover] = ofType(r.events, 'failover');
    assert.deepEqual([failover?.from, failover?.to], [s.agent, 'claude'], log);
    // The reset the limit named (Codex names it to the minute), not a guess; the log says how far away it is.
    const resetsAt = failover!.resetsAt!;
    assert.ok(
      Math.abs(resetsAt - named) <= 60_000,
      `${new Date(resetsAt).toISOString()} for ${new Date(named).toISOString()}`,
    );
    assert.match(
      log,
      new RegExp(`FAILOVER — ${s.agent} hit its usage limit \\(resets in \\d+ min\\); the next iteration runs claude`),
    );
    assert.equal(ofType(r.events, 'iterationEnded')[0]?.ending, 'deferred', log);
    assert.equal(ofType(r.events, 'deferred').length, 0, 'no wait: the other agent ran at once');
    // The same task: the prompt the limited agent was sent is the one claude was sent.
    const taskOf = (t: string) => t.slice(t.indexOf('## Task')).trimEnd();
    const [limitedPrompt] = iterationPrompts(limited);
    const [claudePrompt] = iterationPrompts(claudeServer);
    assert.ok(limitedPrompt && claudePrompt, log);
    // (opencode's request ends the prompt with a quote of its own.)
    assert.ok(
      taskOf(limitedPrompt).startsWith(taskOf(claudePrompt)),
      `${taskOf(limitedPrompt)}\n----\n${taskOf(claudePrompt)}`,
    );
    assert.equal(ws.read('bye.txt'), 'bye\n');
    assertNothingLeft(r);
  } finally {
    await limited.close();
    await claudeServer.close();
  }
}
