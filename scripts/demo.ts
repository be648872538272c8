/**
 * `npm run demo`: a complete Ralph loop on a fresh clone, with no account and no network.
 *
 * It creates a small sample project (a slugify library with `node --test` tests, a RALPH_TASK.md checklist and, for
 * the headless face, a quantum.json with dependent stories) and starts the scripted model server on 127.0.0.1
 * (test/support/modelServer.ts) with a realistic script (the model writes code, runs the tests, ticks boxes, commits,
 * signals); the Claude Code CLI, its tools, git and the gates are real.
 *
 * Faces: by default the extension in a browser (scripts/demoWorkbench.ts): the packaged .vsix in VS Code's server on
 * the project, its URL printed and opened; the person presses Ralph: Start. `--cli`: headless, `ralph run` on both
 * sources in this terminal, printing the activity stream and a summary (what CI and scripts use).
 *
 * Options: `--dir <path>` (where to create the project; default a new temp folder), `--keep` (keep the project
 * afterwards; always kept with --dir), `--fast` (no pause between scripted turns; also RALPH_DEMO_TURN_MS=<ms>).
 * Browser face only: `--start` (press Ralph: Start once the workbench is up), `--exit-when-done` (exit with the run's
 * exit code when it ends), `--no-open` (print the URL only), `--vsix <file>` (install this .vsix instead of packaging
 * one), `--screenshot <file.png>` (with --start: a PNG of the workbench during the run).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { bash, edit, say, startModelServer, write, type Turn } from '../test/support/modelServer';
import { findRepoRoot } from '../test/support/repoRoot';
import { runWorkbenchDemo, serverHelp, workbenchUnavailable } from './demoWorkbench';

const repo = findRepoRoot(__dirname);
const args = process.argv.slice(2);
const dirArg = args.includes('--dir') ? args[args.indexOf('--dir') + 1] : undefined;
const keep = args.includes('--keep') || dirArg !== undefined;
const cli = args.includes('--cli');
const valueOf = (flag: string) => (args.includes(flag) ? args[args.indexOf(flag) + 1] : undefined);
/** Pause before each scripted turn, ms: slow enough to watch in the browser (1.5 s), none headless or with --fast. */
const turnMs = Number(process.env.RALPH_DEMO_TURN_MS ?? (args.includes('--fast') || cli ? 0 : 1500));
const claude = path.join(repo, 'node_modules', '.bin', 'claude');

const SLUGIFY_STUB = `'use strict';
/** Turns a title into a URL slug. */
function slugify(text) {
  throw new Error('not implemented');
}
module.exports = { slugify };
`;
const SLUGIFY_V1 = `'use strict';
/** Turns a title into a URL slug: lower case, words joined by "-". */
function slugify(text) {
  return text.trim().toLowerCase().split(/\\s+/).join('-');
}
module.exports = { slugify };
`;
const SLUGIFY_V2 = `'use strict';
/** Turns a title into a URL slug: lower case ASCII words joined by "-", accents and punctuation dropped. */
function slugify(text, { maxLength = 60 } = {}) {
  const words = text.normalize('NFKD').replace(/[\\u0300-\\u036f]/g, '').toLowerCase().replace(/[^a-z0-9]+/g, ' ').trim().split(' ').filter(Boolean);
  let out = words.join('-');
  if (out.length > maxLength) out = out.slice(0, maxLength).replace(/-[^-]*$/, '');
  return out;
}
module.exports = { slugify };
`;
const TEST_V1 = `'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { slugify } = require('../src/slugify');

test('joins lower-case words with dashes', () => {
  assert.strictEqual(slugify('Hello Ralph Loop'), 'hello-ralph-loop');
});
`;
const TEST_V2 =
  TEST_V1 +
  `
test('drops accents and punctuation', () => {
  assert.strictEqual(slugify('Crème brûlée, please!'), 'creme-brulee-please');
});

test('cuts long slugs at a word boundary', () => {
  assert.strictEqual(slugify('one two three four', { maxLength: 12 }), 'one-two');
});
`;
const README_V1 = '# slugify\n\nTurns titles into URL slugs.\n';
const README_V2 =
  README_V1 +
  '\n## Usage\n\n```js\nconst { slugify } = require("./src/slugify");\nslugify("Crème brûlée"); // "creme-brulee"\n```\n';

const TASKS = `# Ralph task: a slugify library

## Success criteria
- [ ] Implement slugify for plain words, with a test
- [ ] Handle accents, punctuation and a maximum length [risky]
- [ ] Document the usage in README.md
`;

const QUANTUM = {
  project: 'slugify',
  feature: 'cli',
  staleThresholdMinutes: 20,
  stories: [
    {
      id: 'US-002',
      title: 'A slug command line',
      description: 'bin/slug.js prints the slug of its arguments.',
      status: 'pending',
      priority: 1,
      dependsOn: ['US-001'],
      acceptanceCriteria: ['node bin/slug.js Hello World prints hello-world'],
      retries: { attempts: 0, maxAttempts: 3 },
    },
    {
      id: 'US-001',
      title: 'Export slugify from index.js',
      description: 'index.js re-exports src/slugify.js.',
      status: 'pending',
      priority: 2,
      dependsOn: [],
      acceptanceCriteria: ['require("./index").slugify exists'],
      retries: { attempts: 0, maxAttempts: 3 },
    },
  ],
};

function git(dir: string, ...a: string[]): void {
  execFileSync('git', a, { cwd: dir, stdio: 'ignore', env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null' } });
}

/**
 * Writes the sample project into `dir` and commits it. Headless (`withQuantum`): the checklist and quantum.json, run
 * one after the other. In the browser: the checklist alone (one source, so Ralph: Start asks nothing), the agent set
 * in `.vscode/settings.json`, and a pause between iterations a person can see.
 */
function createProject(dir: string, withQuantum: boolean): void {
  const files: Record<string, string> = {
    'package.json':
      JSON.stringify(
        { name: 'slugify-demo', version: '1.0.0', private: true, scripts: { test: 'node --test' } },
        null,
        2,
      ) + '\n',
    'src/slugify.js': SLUGIFY_STUB,
    'README.md': README_V1,
    'RALPH_TASK.md': TASKS,
    '.ralph/config.json':
      JSON.stringify(
        {
          gates: {
            basic: 'node --test test/',
            full: 'node --test test/',
            final: 'node --test test/ && node -e "require(\'./src/slugify\')"',
          },
          timing: { betweenIterationsMs: withQuantum ? 200 : 1000 },
        },
        null,
        2,
      ) + '\n',
    '.gitignore': 'node_modules/\n.ralph/\n',
  };
  if (withQuantum) files['quantum.json'] = JSON.stringify(QUANTUM, null, 2) + '\n';
  else
    files['.vscode/settings.json'] =
      JSON.stringify({ 'ralph.agent': 'claude', 'workbench.startupEditor': 'none' }, null, 2) + '\n';
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), text);
  }
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'user.email', 'ralph-demo@example.invalid');
  git(dir, 'config', 'user.name', 'Ralph Demo');
  git(dir, 'config', 'commit.gpgsign', 'false');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'chore: sample project');
}

/** What the scripted model does for the checklist: three tasks, each written, tested, ticked and committed. */
function checklistScript(dir: string): Turn[] {
  const f = (rel: string) => path.join(dir, rel);
  const usage = (n: number) => ({ input: 1200, cacheRead: n, output: 300 });
  return [
    write(f('src/slugify.js'), SLUGIFY_V1, {
      text: 'I will implement the simplest slugify first.',
      usage: usage(9_000),
    }),
    write(f('test/slugify.test.js'), TEST_V1, { usage: usage(11_000) }),
    bash('node --test test/', { text: 'Running the tests.', usage: usage(12_000) }),
    edit(
      f('RALPH_TASK.md'),
      '- [ ] Implement slugify for plain words, with a test',
      '- [x] Implement slugify for plain words, with a test',
      { usage: usage(13_000) },
    ),
    bash('git add src/slugify.js test/slugify.test.js RALPH_TASK.md && git commit -q -m "feat: slugify plain words"', {
      usage: usage(14_000),
    }),
    say('Implemented slugify for plain words; the test passes and the box is ticked.', { usage: usage(15_000) }),

    write(f('test/slugify.test.js'), TEST_V2, {
      text: 'Adding tests for accents, punctuation and length first.',
      usage: usage(16_000),
    }),
    write(f('src/slugify.js'), SLUGIFY_V2, { usage: usage(18_000) }),
    bash('node --test test/', { usage: usage(19_000) }),
    edit(
      f('RALPH_TASK.md'),
      '- [ ] Handle accents, punctuation and a maximum length [risky]',
      '- [x] Handle accents, punctuation and a maximum length [risky]',
      { usage: usage(20_000) },
    ),
    bash(
      'git add src/slugify.js test/slugify.test.js RALPH_TASK.md && git commit -q -m "feat: accents, punctuation, max length"',
      { usage: usage(21_000) },
    ),
    say('Accents, punctuation and the length limit are handled and tested.', { usage: usage(22_000) }),

    write(f('README.md'), README_V2, { usage: usage(23_000) }),
    edit(f('RALPH_TASK.md'), '- [ ] Document the usage in README.md', '- [x] Document the usage in README.md', {
      usage: usage(24_000),
    }),
    bash('git add README.md RALPH_TASK.md && git commit -q -m "docs: usage"', { usage: usage(25_000) }),
    say('README documents the usage. <promise>ALL_TASKS_DONE</promise>', { usage: usage(26_000) }),
  ];
}

/** The quantum stories, in dependency order (US-001 first although US-002 has the better priority). */
function quantumScript(dir: string): Turn[] {
  const f = (rel: string) => path.join(dir, rel);
  const usage = (n: number) => ({ input: 1000, cacheRead: n, output: 250 });
  return [
    write(f('index.js'), "'use strict';\nmodule.exports = require('./src/slugify');\n", { usage: usage(8_000) }),
    bash(
      'node -e "if (typeof require(\'./index\').slugify !== \'function\') process.exit(1)" && git add index.js && git commit -q -m "feat: US-001 export slugify"',
      { usage: usage(9_000) },
    ),
    say('index.js exports slugify. <quantum>STORY_PASSED</quantum>', { usage: usage(10_000) }),
    write(
      f('bin/slug.js'),
      "#!/usr/bin/env node\n'use strict';\nconsole.log(require('../index').slugify(process.argv.slice(2).join(' ')));\n",
      { usage: usage(11_000) },
    ),
    bash('node bin/slug.js Hello World && git add bin/slug.js && git commit -q -m "feat: US-002 slug command"', {
      usage: usage(12_000),
    }),
    say('`node bin/slug.js Hello World` prints hello-world. <quantum>STORY_PASSED</quantum>', { usage: usage(13_000) }),
  ];
}

/**
 * The headless face's stop: the person's Ctrl-C (or a SIGTERM) reaches the demo alone (each `ralph run` has its own
 * process group), which passes it on once to the run going on and starts no other. Null while nobody stopped it.
 */
let interrupted: NodeJS.Signals | null = null;
/** The `ralph run` going on, if any. */
let running: ChildProcess | null = null;

function onStopSignal(sig: NodeJS.Signals): void {
  // A second Ctrl-C is passed on too: `ralph run` then quits at once.
  interrupted ??= sig;
  running?.kill(sig);
}

/** `ralph run`'s exit code in words (runEvent.ts EXIT_CODES). */
function runEndWords(code: number): string {
  if (code === 0) return 'complete';
  if (code === 1) return 'failed (its RALPH STOP line above says why)';
  if (code === 2) return 'a cap was reached';
  if (code === 3) return 'stopped by a STOP (ralph stop, or a STOP file)';
  if (code === 130) return 'cancelled (Ctrl-C)';
  return `ended with exit code ${code}`;
}

/** Runs `ralph run` in the project against a scripted server; resolves with its exit code. */
async function ralphRun(dir: string, home: string, script: Turn[], source: string): Promise<number> {
  const server = await startModelServer(paced(script), { model: 'claude-sonnet-4-6' });
  try {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env))
      if (!k.startsWith('ANTHROPIC_') && !k.startsWith('CLAUDE_')) env[k] = v;
    Object.assign(env, {
      ANTHROPIC_BASE_URL: server.url,
      ANTHROPIC_API_KEY: 'demo-key-for-the-local-scripted-server',
      HOME: home,
      IS_SANDBOX: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      PATH: `${path.dirname(claude)}${path.delimiter}${process.env.PATH}`,
    });
    const child = spawn(process.execPath, [path.join(repo, 'dist', 'cli.js'), 'run', '--trust', '--source', source], {
      cwd: dir,
      env,
      stdio: ['ignore', 'inherit', 'inherit'],
      // Its own process group: a Ctrl-C in this terminal reaches the demo, which passes it on once (onStopSignal);
      // `ralph run` takes a second SIGINT for "quit at once".
      detached: true,
    });
    running = child;
    return await new Promise<number>((resolve) =>
      child.on('exit', (code, signal) => resolve(code ?? (signal ? 130 : 1))),
    );
  } finally {
    running = null;
    await server.close();
  }
}

/** `script` with the demo's pause (`turnMs`) before each turn. */
function paced(script: Turn[]): Turn[] {
  return turnMs > 0 ? script.map((t) => ({ ...t, delayMs: (t as { delayMs?: number }).delayMs ?? turnMs })) : script;
}

function claudeProcesses(dir: string): number[] {
  const out: number[] = [];
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (
        fs.readlinkSync(`/proc/${pid}/cwd`).startsWith(dir) &&
        fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('claude')
      )
        out.push(Number(pid));
    } catch {
      // gone or not ours
    }
  }
  return out;
}

/** The browser face: set-up (as the test tiers), the project, then scripts/demoWorkbench.ts. Resolves with the exit code. */
async function browserDemo(): Promise<number> {
  // VS Code's server comes from the test tiers' set-up (apt the first time); with RALPH_VSCODE_SERVER it is the caller's.
  const setup = process.env.RALPH_VSCODE_SERVER ? ['--claude-only'] : [];
  try {
    execFileSync('bash', [path.join(repo, 'scripts', 'setup-test-env.sh'), ...setup], { stdio: 'inherit' });
  } catch {
    console.error(serverHelp('scripts/setup-test-env.sh failed (its messages are above)'));
    return 1;
  }
  const unavailable = workbenchUnavailable(repo, args.includes('--start'));
  if (unavailable) {
    console.error(unavailable);
    return 1;
  }
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-demo-'));
  const dir = dirArg ? path.resolve(dirArg) : path.join(scratch, 'slugify');
  fs.mkdirSync(dir, { recursive: true });
  createProject(dir, false);
  console.log(`\nRalph Loop demo: sample project in ${dir}`);
  console.log(
    'The model is a scripted server on 127.0.0.1; the Claude Code CLI, its tools, git and the gates are real.',
  );
  let code = 1;
  const checklist = checklistScript(dir);
  try {
    code = await runWorkbenchDemo({
      repo,
      project: dir,
      scratch,
      script: paced(checklist),
      // The second task's first turn waits for the screenshot: the picture has the first task done and the run live.
      holdForScreenshot: checklist.findIndex((t) => t.kind === 'text') + 1,
      start: args.includes('--start'),
      exitWhenDone: args.includes('--exit-when-done'),
      open: !args.includes('--no-open'),
      vsix: valueOf('--vsix'),
      screenshot: valueOf('--screenshot') && path.resolve(valueOf('--screenshot')!),
    });
  } finally {
    // The scratch folder holds the project unless --dir put it elsewhere.
    if (keep) console.log(`demo: the project is kept in ${dir} (records in .ralph/)`);
    if (dirArg || !keep) fs.rmSync(scratch, { recursive: true, force: true });
  }
  return code;
}

/**
 * The demo's last line, with its cause: `complete`, `stopped by you: …` (a Ctrl-C or a STOP; the runs not started
 * are named), or `FAILED: …` naming the run that failed and how it ended, or the agent processes left behind.
 */
function demoEndText(r: {
  first: number;
  second: number | null;
  left: number;
  interrupted: NodeJS.Signals | null;
}): string {
  const byPerson = (c: number | null) => c === 3 || c === 130;
  if (r.interrupted || byPerson(r.first) || byPerson(r.second)) {
    const how = r.interrupted ? ` (${r.interrupted === 'SIGINT' ? 'Ctrl-C' : r.interrupted})` : '';
    const quantum = r.second === null ? 'was not started' : runEndWords(r.second);
    return `stopped by you${how}: the checklist run ${runEndWords(r.first)}; the quantum run ${quantum}`;
  }
  const why: string[] = [];
  if (r.first !== 0) why.push(`the checklist run ${runEndWords(r.first)}`);
  if (r.second !== null && r.second !== 0) why.push(`the quantum run ${runEndWords(r.second)}`);
  if (r.left > 0) why.push(`${r.left} claude process(es) left running`);
  return why.length ? `FAILED: ${why.join('; ')}` : 'complete';
}

async function main(): Promise<void> {
  if (!fs.existsSync(path.join(repo, 'dist', 'cli.js')))
    throw new Error('dist/cli.js is missing: run `node esbuild.mjs` first (npm run demo does)');
  if (!cli) {
    process.exitCode = await browserDemo();
    return;
  }
  execFileSync('bash', [path.join(repo, 'scripts', 'setup-test-env.sh'), '--claude-only'], { stdio: 'inherit' });
  const base = dirArg ? path.resolve(dirArg) : fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-demo-'));
  const dir = dirArg ? base : path.join(base, 'slugify');
  const home = path.join(dirArg ? fs.mkdtempSync(path.join(os.tmpdir(), 'ralph-demo-home-')) : base, 'home');
  fs.mkdirSync(dir, { recursive: true });
  fs.mkdirSync(home, { recursive: true });
  createProject(dir, true);
  console.log(`\nRalph Loop demo: sample project in ${dir}`);
  console.log(
    'The model is a scripted server on 127.0.0.1; the Claude Code CLI, its tools, git and the gates are real.\n',
  );

  process.on('SIGINT', onStopSignal);
  process.on('SIGTERM', onStopSignal);
  console.log('── 1/2: the checklist RALPH_TASK.md ──────────────────────────────────────────');
  const first = await ralphRun(dir, home, checklistScript(dir), 'RALPH_TASK.md');
  // A person's stop ends the demo: a run stopped (STOP) or cancelled (Ctrl-C) starts no other.
  let second: number | null = null;
  if (interrupted === null && first !== 3 && first !== 130) {
    console.log('\n── 2/2: quantum.json stories, in dependency order ────────────────────────────');
    second = await ralphRun(dir, home, quantumScript(dir), 'quantum');
  }

  const left = claudeProcesses(dir);
  const log = execFileSync('git', ['log', '--oneline'], { cwd: dir, encoding: 'utf8' }).trim();
  const stories = JSON.parse(fs.readFileSync(path.join(dir, 'quantum.json'), 'utf8')).stories as {
    id: string;
    status: string;
  }[];
  const ok = first === 0 && second === 0 && left.length === 0;
  console.log('\n── summary ───────────────────────────────────────────────────────────────────');
  console.log(
    `checklist run: exit ${first}; quantum run: ${second === null ? 'not started' : `exit ${second}`}; claude processes left: ${left.length}`,
  );
  console.log(`stories: ${stories.map((s) => `${s.id} ${s.status}`).join(', ')}`);
  console.log(
    `commits:\n${log
      .split('\n')
      .map((l) => `  ${l}`)
      .join('\n')}`,
  );
  const kept = keep || !ok;
  if (kept)
    console.log(
      `records: ${path.join(dir, '.ralph')} (activity.log, runs/<id>/events.jsonl, progress.txt, iter-NNN.jsonl)`,
    );
  else
    console.log(
      '(the sample project is removed now; run with --keep or --dir <path> to look at it and its .ralph/ records)',
    );
  console.log(`\nRalph Loop demo: ${demoEndText({ first, second, left: left.length, interrupted })}`);
  if (!kept) fs.rmSync(base, { recursive: true, force: true });
  // A person's stop exits as `ralph run` did (3 for a STOP, 130 for Ctrl-C); anything else that is not complete, 1.
  const stoppedCode = [first, second].find((c) => c === 3 || c === 130) ?? (interrupted ? 130 : null);
  process.exitCode = ok ? 0 : (stoppedCode ?? 1);
}

main().catch((err) => {
  const message = (err as Error).message;
  console.error(message.startsWith('demo:') ? message : `demo: ${message}`);
  process.exitCode = 1;
});
