import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { processGroupAlive } from '../../src/core/agents/spawn';
import type { EngineEvent } from '../../src/core/loop/events';
import { agentCliPath, type InstalledAgent } from './agentClis';
import type { AgentModelEnv } from './agentEnv';
import { type Workspace, runEngine, useWorkspaces } from './engineHarness';
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
 * server, configured through the agent's own config files (agentEnv.ts): the loop engine drives it as `ralph run
 * --agent <name>` does. Starts are slow (opencode and Qwen take seconds), so each run covers several rules:
 *
 * 1. a checklist task, with a `[deny]` row and a gate in `.ralph/command-policy`: the agent ticks the box and claims
 *    COMPLETE without the work (refused: the gate fails, the box is unticked, never done); the next prompt carries
 *    the failure; the agent then tries the denied command (the guard refuses it, or the run refuses to start when the
 *    agent cannot enforce the row), writes the file and passes the gate (verified, completed);
 * 2. a rotation at a low threshold, then Cancel while the next iteration's request is pending: nothing left running.
 */
export interface AgentScenario {
  agent: InstalledAgent;
  /** Points the agent at the server through its own config files in `home`. */
  modelEnv(home: string, openaiUrl: string): AgentModelEnv;
  /** The agent enforces `[deny]` rows (else the run must refuse to start naming the row). */
  enforcesDeny: boolean;
  /** The context rotation threshold that a shell output of 8000 characters crosses, tokens. */
  rotateAt: number;
}

const POLICY = `[gates]
basic | test -f ok.txt || { echo "FAIL: ok.txt is missing"; exit 1; }

[deny]
git push | pushing is the operator's job
`;
const TICK = `sed -i 's/- \\[ \\] Make/- [x] Make/' RALPH_TASK.md`;

/** The prompt of each iteration: the first user text of the first request that names the task. */
function prompts(server: ModelServer): string[] {
  const seen: string[] = [];
  for (const r of server.agentRequests()) {
    const text = requestUserTexts(r).find((t) => t.includes('Make the check pass')) ?? '';
    if (text && !seen.includes(text)) seen.push(text);
  }
  return seen;
}

export function describeAgentScenario(s: AgentScenario): void {
  describe(`${s.agent}: the real CLI driven by the loop engine against the scripted model server`, function () {
    this.timeout(600_000);
    const make = useWorkspaces();
    let cli = '';
    before(() => {
      cli = agentCliPath(s.agent);
    });

    const start = async (ws: Workspace, script: Turn[]) => {
      const server = await startModelServer(script);
      const m = s.modelEnv(ws.home, server.openaiUrl);
      return { server, env: m.env, model: m.model };
    };
    const pathKey = `${s.agent}Path`;

    it('refuses a tick without the work, retries with the failure in the prompt, keeps the deny row, then completes with a green gate', async () => {
      const ws = make({ 'RALPH_TASK.md': '- [ ] Make the check pass\n', '.ralph/command-policy': POLICY });
      const script: Turn[] = [
        shell(TICK),
        say('Done. <promise>COMPLETE</promise>'),
        shell('git push origin main'),
        shell(`printf 'ok\\n' > ok.txt && ${TICK} && git add ok.txt RALPH_TASK.md && git commit -qm "add ok.txt"`),
        say('Wrote ok.txt; the check passes. <promise>COMPLETE</promise>'),
      ];
      const { server, env, model } = await start(ws, script);
      try {
        const config = { [pathKey]: cli, model, ...(s.enforcesDeny ? {} : { guard: 'strict' }) };
        if (!s.enforcesDeny) {
          await assert.rejects(
            runEngine(ws, [], { server, config, env, engine: { agent: s.agent } }),
            /git push/,
            'a deny row the agent cannot enforce refuses the run, naming the row',
          );
          return;
        }
        const run = await runEngine(ws, [], { server, config, env, engine: { agent: s.agent } });
        const log = run.lines.join('\n');
        assert.equal(run.result.state, 'completed', log);
        const types = run.events.map((e) => e.type);
        // The first claim was refused: the gate failed and the box was unticked before anything was verified.
        const failed = run.events.filter(
          (e): e is Extract<EngineEvent, { type: 'attemptFailed' }> => e.type === 'attemptFailed',
        );
        assert.equal(failed.length, 1, log);
        assert.ok(types.indexOf('attemptFailed') < types.indexOf('verified'), log);
        assert.equal(run.events.filter((e) => e.type === 'verified').length, 1);
        const p = prompts(server);
        assert.equal(p.length, 2, 'two iterations');
        assert.doesNotMatch(p[0]!, /Previous attempt/);
        assert.match(p[1]!, /Previous attempt #1[\s\S]*FAIL: ok.txt is missing/);
        // The denied command did not run; the agent was told why.
        const denied = server
          .agentRequests()
          .flatMap((r) => requestToolResults(r))
          .map((t) => t.content);
        assert.ok(
          denied.some((t) => /pushing is the operator's job/.test(t)),
          `the deny reason reached the agent:\n${denied.join('\n---\n')}`,
        );
        assert.ok(
          run.events.some((e) => e.type === 'guard' && (e as { decision?: string }).decision === 'deny'),
          log,
        );
        assert.equal(ws.read('ok.txt'), 'ok\n');
        assert.equal(ws.read('RALPH_TASK.md'), '- [x] Make the check pass\n');
        for (const e of run.events)
          if (e.type === 'agentStarted' && e.pid) assert.equal(processGroupAlive(e.pid), false);
        const started = run.events.find((e) => e.type === 'runStarted');
        assert.equal(started?.type === 'runStarted' ? started.agent : null, s.agent);
      } finally {
        await server.close();
      }
    });

    it('rotates at the context threshold, then Cancel mid-turn leaves no process', async () => {
      const ws = make({ 'RALPH_TASK.md': '- [ ] Make the check pass\n' });
      const script: Turn[] = [shell('head -c 8000 /dev/zero | tr "\\0" x'), { kind: 'hang', times: Infinity }];
      const { server, env, model } = await start(ws, script);
      const cancel = new AbortController();
      try {
        const run = await runEngine(ws, [], {
          server,
          config: {
            [pathKey]: cli,
            model,
            rotateThresholdTokens: s.rotateAt,
            gates: { basic: 'true' },
            maxIterations: 3,
          },
          env,
          engine: { agent: s.agent, signal: cancel.signal },
          onEvent: (e) => {
            if (e.type === 'agentStarted' && e.iteration === 2) {
              const n = server.agentRequests().length;
              void server.waitForAgentRequests(n + 1).then(() => cancel.abort());
            }
          },
        });
        const log = run.lines.join('\n');
        assert.equal(run.result.state, 'cancelled', log);
        const rotate = run.events.find((e) => e.type === 'rotate');
        assert.ok(rotate, log);
        const ends = run.events.filter((e) => e.type === 'iterationEnded').map((e) => (e as { ending: string }).ending);
        assert.deepEqual(ends, ['rotation', 'cancelled'], log);
        const pids = run.events.flatMap((e) => (e.type === 'agentStarted' && e.pid ? [e.pid] : []));
        assert.equal(pids.length, 2);
        for (const pid of pids) assert.equal(processGroupAlive(pid), false);
        assert.ok(fs.existsSync(ws.file('.ralph/handoff.md')));
      } finally {
        await server.close();
      }
    });
  });
}
