import * as assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { agentCliPath, type InstalledAgent, opencodeConfigDeps } from '../../support/agentClis';
import { runCliAsync } from '../../support/cli';
import { type Workspace, cleanupWorkspace, makeWorkspace } from '../../support/engineHarness';
import { repoRoot } from '../../support/repoRoot';
import { makeTempFolder } from '../../support/tempFolder';

/**
 * `ralph run --agent <agent>` (the real CLI process, dist/cli.js) with each of the five agent CLIs against a model
 * server that is not the project's own: test/support/own-model-server.py, Python's standard library only, sharing no
 * code with test/support/modelServer.ts. Each agent is pointed at it the way a user points it at their own model
 * server: a HOME holding the agent's own config files, and the variables the agent reads (more-agents.md). Ralph is
 * given nothing agent-specific beyond `--agent`: the binary is found on PATH, no model or path is configured.
 *
 * Per agent, two runs of a one-box checklist with a gate (`hello.txt` says hello):
 * - `work`: the model calls the agent's shell tool to write hello.txt and tick the box, then claims COMPLETE: the run
 *   completes, the box verified by the green gate;
 * - `lazy`: the model ticks the box without writing the file and claims COMPLETE: the gate is red, the box is put back,
 *   the run does not say done.
 */

const TASK = '# Hello\n\n- [ ] Create hello.txt\n';
const GATE = 'grep -qx hello hello.txt';

/**
 * Variables of this process that could point an agent at a real provider or account, or at config and state folders
 * outside the run's HOME: left out, so each folder is the HOME's default.
 */
const OUTER =
  /^(ANTHROPIC_|CLAUDE_|OPENAI_|CODEX_|GEMINI_|GOOGLE_|OPENCODE_|QWEN_|COPILOT_|GH_|GITHUB_|XDG_(CONFIG|DATA|CACHE|STATE)_HOME$)/;

/** How a user configures each agent for their own model server at `base` (`http://127.0.0.1:PORT/<mode>`). */
const CONFIGURE: Record<InstalledAgent, (home: string, base: string) => Record<string, string>> = {
  /** Codex ignores OPENAI_BASE_URL: a provider of `$CODEX_HOME/config.toml` (default `~/.codex`). */
  codex(home, base) {
    write(
      path.join(home, '.codex', 'config.toml'),
      [
        'model = "gpt-5.5"',
        'model_provider = "own"',
        '',
        '[model_providers.own]',
        'name = "own"',
        `base_url = "${base}/v1"`,
        'env_key = "OWN_API_KEY"',
        'wire_api = "responses"',
        '',
      ].join('\n'),
    );
    return { OWN_API_KEY: 'dummy-own-key' };
  },
  /**
   * Gemini CLI: the base URL and key variables, and `~/.gemini/settings.json` choosing API-key auth (without it the
   * base URL selects "gateway" auth, which headless mode rejects) and the model (without one it asks a router first).
   */
  gemini(home, base) {
    write(
      path.join(home, '.gemini', 'settings.json'),
      JSON.stringify({
        security: { auth: { selectedType: 'gemini-api-key' } },
        model: { name: 'gemini-2.5-flash' },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
      }),
    );
    return { GOOGLE_GEMINI_BASE_URL: base, GEMINI_API_KEY: 'dummy-own-key', GEMINI_CLI_NO_RELAUNCH: 'true' };
  },
  /**
   * opencode: a provider in its global `~/.config/opencode/opencode.json`; no model list or update lookups; the plugin
   * package it installs at its first start already there, as after a user's first run (opencodeConfigDeps).
   */
  opencode(home, base) {
    opencodeConfigDeps(path.join(home, '.config', 'opencode'));
    write(
      path.join(home, '.config', 'opencode', 'opencode.json'),
      JSON.stringify({
        provider: {
          own: {
            npm: '@ai-sdk/openai-compatible',
            options: { baseURL: `${base}/v1`, apiKey: '{env:OWN_API_KEY}' },
            models: { 'own-model': { tool_call: true } },
          },
        },
        model: 'own/own-model',
        small_model: 'own/own-model',
        share: 'disabled',
        autoupdate: false,
      }),
    );
    return { OWN_API_KEY: 'dummy-own-key', OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_AUTOUPDATE: '1' };
  },
  /** Qwen Code: `~/.qwen/settings.json` choosing the OpenAI-compatible protocol, and its OPENAI_* variables. */
  qwen(home, base) {
    write(
      path.join(home, '.qwen', 'settings.json'),
      JSON.stringify({
        security: { auth: { selectedType: 'openai' } },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
      }),
    );
    return { OPENAI_BASE_URL: `${base}/v1`, OPENAI_API_KEY: 'dummy-own-key', OPENAI_MODEL: 'own-model' };
  },
  /**
   * Copilot CLI, bring-your-own-key (`copilot help providers`) offline (`copilot help environment`: no GitHub lookups).
   * Its cache (235 MB it unpacks at its first start) is shared between runs through a link in the HOME's `.cache`.
   */
  copilot(home, base) {
    const shared = path.join(repoRoot, '.agent-clis', 'copilot', '.cache', 'copilot');
    fs.mkdirSync(shared, { recursive: true });
    fs.mkdirSync(path.join(home, '.cache'), { recursive: true });
    fs.symlinkSync(shared, path.join(home, '.cache', 'copilot'));
    return {
      COPILOT_PROVIDER_BASE_URL: `${base}/v1`,
      COPILOT_PROVIDER_API_KEY: 'dummy-own-key',
      COPILOT_MODEL: 'own-model',
      COPILOT_OFFLINE: 'true',
    };
  },
};

function write(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

/** One line of the server's log (own-model-server.py). */
interface ServedRequest {
  mode: string;
  label: string | null;
  api: string;
  agent: boolean;
  answer: 'tool' | 'final' | 'side';
  tool: string | null;
}

interface OwnServer {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  /** The requests served with `label`, in order. */
  served(label: string): ServedRequest[];
  close(): Promise<void>;
}

/** Starts own-model-server.py and waits for its "listening PORT" line. */
async function startOwnServer(): Promise<OwnServer> {
  const scratch = makeTempFolder('ralph-own-server-');
  const log = scratch.file('requests.jsonl');
  const child: ChildProcess = spawn('python3', [path.join(repoRoot, 'test', 'support', 'own-model-server.py'), log], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = readline.createInterface({ input: child.stdout! });
  const [first] = (await Promise.race([
    once(lines, 'line'),
    once(child, 'exit').then(([code]) => Promise.reject(new Error(`own-model-server.py exited ${String(code)}`))),
  ])) as [string];
  const port = /^listening (\d+)$/.exec(first)?.[1];
  assert.ok(port, `own-model-server.py said: ${first}`);
  return {
    url: `http://127.0.0.1:${port}`,
    served: (label) =>
      (fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as ServedRequest)
        .filter((r) => r.label === label),
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit');
        child.kill();
        await exited;
      }
      scratch.dispose();
    },
  };
}

/** The run's engine events (`.ralph/runs/<id>/events.jsonl`) of the only run in `ws`. */
function runEvents(ws: Workspace): { type: string; [k: string]: unknown }[] {
  const runs = fs.readdirSync(ws.file('.ralph/runs'));
  assert.equal(runs.length, 1, runs.join(', '));
  return ws
    .read(`.ralph/runs/${runs[0]}/events.jsonl`)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { type: string });
}

describe('ralph run --agent X against a model server of the user’s own, configured in the agent’s own files', function () {
  this.timeout(600_000);
  let server: OwnServer;
  const made: Workspace[] = [];
  before(async () => {
    server = await startOwnServer();
  });
  after(async () => {
    await server?.close();
  });
  afterEach(() => {
    for (const w of made.splice(0)) cleanupWorkspace(w);
  });

  /** `ralph run --agent <agent> --trust` in a fresh workspace, the agent configured for `<mode>` of the server. */
  async function run(agent: InstalledAgent, mode: 'work' | 'lazy') {
    const ws = makeWorkspace({
      'RALPH_TASK.md': TASK,
      '.ralph/config.json': JSON.stringify({ gates: { basic: GATE }, maxIterations: 1 }),
    });
    made.push(ws);
    const home = ws.home;
    const label = `${agent}${mode}`;
    const own = CONFIGURE[agent](home, `${server.url}/${mode}-${label}`);
    const outer = Object.fromEntries(Object.keys(process.env).flatMap((k) => (OUTER.test(k) ? [[k, undefined]] : [])));
    const r = await runCliAsync(ws.dir, ['run', '--agent', agent, '--trust'], {
      ...outer,
      HOME: home,
      // The agent on PATH, as an installed agent is: ralph is told no path.
      PATH: `${path.dirname(agentCliPath(agent))}${path.delimiter}${process.env.PATH ?? ''}`,
      XDG_CACHE_HOME: path.join(home, '.cache'),
      GIT_CONFIG_GLOBAL: '/dev/null',
      ...own,
    });
    return { ws, r, out: `${r.stdout}\n${r.stderr}`, served: server.served(label) };
  }

  for (const agent of ['codex', 'gemini', 'opencode', 'qwen', 'copilot'] as const) {
    it(`${agent}: completes the checklist task with a green gate`, async () => {
      const { ws, r, out, served } = await run(agent, 'work');
      assert.equal(r.code, 0, out);
      assert.match(r.stdout, /SESSION START: pid=\d+ \S+\/\.agent-clis\/\w+\/node_modules\/\.bin\/\w+ /);
      assert.match(r.stdout, /VERIFIED RALPH_TASK\.md:3 — Create hello\.txt \(basic gate green\)/, out);
      assert.match(r.stdout, /RALPH STOP — COMPLETE/, out);
      assert.equal(ws.read('hello.txt'), 'hello\n');
      assert.equal(ws.read('RALPH_TASK.md'), TASK.replace('[ ]', '[x]'));
      const events = runEvents(ws);
      assert.deepEqual(
        events.filter((e) => e.type === 'gateResult').map((e) => e.passed),
        [true, true],
        'the item gate and the final gate, green',
      );
      assert.equal(events.find((e) => e.type === 'runEnded')?.state, 'completed');
      assert.equal(events.find((e) => e.type === 'agentStarted')?.agent, agent);
      // The agent's own turn went to this server: the shell call, then the claim.
      assert.deepEqual(
        served.filter((s) => s.agent).map((s) => s.answer),
        ['tool', 'final'],
        JSON.stringify(served),
      );
    });

    it(`${agent}: does not say done when the box is ticked without the work`, async () => {
      const { ws, r, out, served } = await run(agent, 'lazy');
      assert.equal(r.code, 2, out);
      assert.match(r.stdout, /Agent signaled COMPLETE/, out);
      assert.match(r.stdout, /ATTEMPT 1 FAILED RALPH_TASK\.md:3 — basic gate exit \d+/, out);
      assert.doesNotMatch(r.stdout, /VERIFIED|RALPH STOP — COMPLETE/, out);
      assert.equal(fs.existsSync(ws.file('hello.txt')), false);
      assert.equal(ws.read('RALPH_TASK.md'), TASK, 'the tick is put back');
      const events = runEvents(ws);
      assert.deepEqual(
        events.filter((e) => e.type === 'gateResult').map((e) => e.passed),
        [false],
      );
      assert.equal(events.filter((e) => e.type === 'attemptFailed').length, 1);
      assert.equal(events.find((e) => e.type === 'runEnded')?.state, 'capReached');
      assert.deepEqual(
        served.filter((s) => s.agent).map((s) => s.answer),
        ['tool', 'final'],
        JSON.stringify(served),
      );
    });
  }
});
