import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cliPath, runCliAsync, runCliInProcess } from '../../support/cli';
import { claudeBinary } from '../../support/claude';
import { agentEnv, makeWorkspace, type Workspace } from '../../support/engineHarness';
import { bash, say, startModelServer } from '../../support/modelServer';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/** `ralph -C <folder> …` with the user's state folder `state` (the test's temp folder), RALPH_TRUST cleared. */
function ralphIn(state: string, folder: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [cliPath, '-C', folder, ...args], {
    encoding: 'utf8',
    env: { ...process.env, RALPH_TRUST: '', XDG_STATE_HOME: state, FLOW_ACTOR: 'tester', ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * As {@link ralphIn}; `ralph run` as a process (it is the command that starts agents and holds signals), every other
 * command in this process (`runCliInProcess`: its output, exit code and records are the point).
 */
async function ralphAt(state: string, folder: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  if (args[0] === 'run') return ralphIn(state, folder, args, env);
  const r = await runCliInProcess(folder, args, { RALPH_TRUST: '', XDG_STATE_HOME: state, ...env });
  return { code: r.code, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Issue 11, "A repository is not trusted by default", through dist/cli.js (in this process; `ralph run` as a process):
 * workspace configuration that names programs runs only once trusted (`ralph trust`), `--trust` / `RALPH_TRUST=1` for
 * one command, `ralph doctor` never executes an untrusted path, and agentArgs never reach the run records.
 */
describe('ralph trust: workspace configuration that names programs runs only once trusted', function () {
  this.timeout(120_000);
  let t: TempFolder;
  let state: string;
  beforeEach(() => {
    t = makeTempFolder('ralph-trust-cli-');
    state = path.join(t.dir, 'state');
  });
  afterEach(() => t.dispose());

  const ralph = (folder: string, args: string[], env: NodeJS.ProcessEnv = {}) => ralphAt(state, folder, args, env);

  /** An agent stub that leaves a marker when executed at all. */
  function markerAgent(rel: string, marker: string): void {
    t.write(rel, `#!/bin/sh\necho ran > "${marker}"\necho "9.9.9 (Claude Code)"\n`);
    fs.chmodSync(path.join(t.dir, rel), 0o755);
  }

  it('ralph doctor never executes the claudePath / cursorAgentPath of an untrusted workspace, says so, and runs them once trusted', async () => {
    const ws = path.join(t.dir, 'ws');
    const claudeMarker = path.join(t.dir, 'claude-ran');
    const cursorMarker = path.join(t.dir, 'cursor-ran');
    markerAgent('ws/bin/claude', claudeMarker);
    markerAgent('ws/bin/cursor', cursorMarker);
    t.write('ws/RALPH_TASK.md', '- [ ] a\n');
    t.write(
      'ws/.ralph/config.json',
      JSON.stringify({ claudePath: './bin/claude', cursorAgentPath: './bin/cursor', gates: { basic: 'true' } }),
    );
    const env = { PATH: path.dirname(process.execPath), IS_SANDBOX: '1' };
    const untrusted = await ralph(ws, ['doctor'], env);
    assert.equal(fs.existsSync(claudeMarker), false, 'the untrusted claudePath was executed');
    assert.equal(fs.existsSync(cursorMarker), false, 'the untrusted cursorAgentPath (agent not selected) was executed');
    assert.equal(untrusted.code, 1);
    assert.match(untrusted.stdout, /claudePath "\.\/bin\/claude" from \.ralph\/config\.json: not run/);
    assert.match(untrusted.stdout, /NOT TRUSTED/);
    assert.match(untrusted.stdout, /ralph trust/);
    // A folder VS Code trusts is not Ralph-trusted by that: doctor says why, and that one record serves both faces.
    assert.match(untrusted.stdout, /VS Code's Workspace Trust is another decision/);
    assert.match(untrusted.stdout, /one record for the CLI and VS Code/);
    const json = JSON.parse((await ralph(ws, ['doctor', '--json'], env)).stdout);
    assert.equal(json.trust.state, 'untrusted');
    assert.equal(json.ok, false);
    // The gates the file names are shown before trust (reading them runs nothing); the run waits for trust, not a gate.
    assert.deepEqual(json.gates, { source: 'config', file: '.ralph/config.json', tiers: ['basic'] });
    assert.deepEqual(json.refusals, []);
    assert.equal(fs.existsSync(claudeMarker), false);

    assert.equal((await ralph(ws, ['trust'])).code, 0);
    const trusted = await ralph(ws, ['doctor', '--json'], env);
    assert.equal(fs.existsSync(claudeMarker), true, 'once trusted, doctor asks the configured agent for its version');
    assert.equal(JSON.parse(trusted.stdout).trust.state, 'trusted');
    assert.equal(trusted.code, 0, trusted.stdout);
  });

  it('ralph doctor --trust and RALPH_TRUST=1 run the configured path for that command only', async () => {
    const ws = path.join(t.dir, 'ws');
    const marker = path.join(t.dir, 'ran');
    markerAgent('ws/bin/claude', marker);
    t.write('ws/RALPH_TASK.md', '- [ ] a\n');
    t.write('ws/.ralph/config.json', JSON.stringify({ claudePath: './bin/claude' }));
    await ralph(ws, ['doctor', '--trust'], { PATH: path.dirname(process.execPath) });
    assert.equal(fs.existsSync(marker), true);
    fs.rmSync(marker);
    await ralph(ws, ['doctor'], { PATH: path.dirname(process.execPath), RALPH_TRUST: '1' });
    assert.equal(fs.existsSync(marker), true);
    assert.equal(
      JSON.parse((await ralph(ws, ['trust', '--show', '--json'])).stdout).state,
      'untrusted',
      'nothing was recorded',
    );
  });

  it('ralph run refuses untrusted content, printing what it runs and how to trust it; --trust and RALPH_TRUST=1 let it through', async () => {
    const ws = path.join(t.dir, 'ws');
    t.write('ws/RALPH_TASK.md', '- [ ] a\n');
    t.write('ws/.ralph/config.json', JSON.stringify({ claudePath: './missing-claude', gates: { basic: 'npm test' } }));
    const refused = await ralph(ws, ['run']);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      /`ralph run` refused: the workspace configuration names programs to run and is not trusted here/,
    );
    assert.match(refused.stderr, /\.ralph\/config\.json gates\.basic = "npm test"/);
    assert.match(refused.stderr, /run `ralph trust`/);
    assert.equal(fs.existsSync(path.join(ws, '.ralph', 'runs')), false, 'no run was created');
    const json = JSON.parse((await ralph(ws, ['run', '--json'])).stdout);
    assert.equal(json.success, false);
    assert.equal(json.trust.state, 'untrusted');
    // Past the trust check, the run stops at the next refusal: the configured agent is missing.
    for (const r of [await ralph(ws, ['run', '--trust']), await ralph(ws, ['run'], { RALPH_TRUST: '1' })]) {
      assert.equal(r.code, 1);
      assert.match(r.stderr, /The claude CLI was not found \(\.\/missing-claude/);
      assert.doesNotMatch(r.stderr, /refused: the workspace configuration/);
    }
  });

  it('ralph trust --show reports without recording; ralph trust records; nothing to trust is a success', async () => {
    const ws = path.join(t.dir, 'ws');
    t.write('ws/.ralph/command-policy', '[gates]\nbasic | make test\n');
    const show = await ralph(ws, ['trust', '--show']);
    assert.equal(show.code, 1);
    assert.match(show.stdout, /NOT TRUSTED/);
    assert.match(show.stdout, /\.ralph\/command-policy \[gates\] basic \| make test/);
    assert.equal(fs.existsSync(state), false, '--show writes nothing');
    const trusted = await ralph(ws, ['trust', '--json']);
    assert.equal(trusted.code, 0);
    assert.equal(JSON.parse(trusted.stdout).previous, 'untrusted');
    const after = JSON.parse((await ralph(ws, ['trust', '--show', '--json'])).stdout);
    assert.deepEqual([after.state, after.trusted], ['trusted', true]);
    assert.ok(after.recordFile.startsWith(path.join(state, 'ralph', 'trust')));
    t.write('ws/.ralph/command-policy', '[gates]\nbasic | true\n');
    const changed = await ralph(ws, ['trust', '--show', '--json']);
    assert.equal(changed.code, 1);
    // The makefile `make test` read (none here) is no longer part of the content either.
    assert.deepEqual(JSON.parse(changed.stdout).diff, [
      '- .ralph/command-policy [gates] basic | make test',
      '- workspace file Makefile missing',
      '+ .ralph/command-policy [gates] basic | true',
    ]);
    const empty = path.join(t.dir, 'empty');
    fs.mkdirSync(empty);
    const nothing = await ralph(empty, ['trust']);
    assert.equal(nothing.code, 0);
    assert.match(nothing.stdout, /Nothing to trust/);
    assert.equal((await ralph(empty, ['trust', '--show'])).code, 0);
  });
  it('ralph trust refuses inside an agent iteration (breaker-s5 row 19): exit 1, a clear message, nothing recorded; --show still reports', async () => {
    const ws = path.join(t.dir, 'ws');
    t.write('ws/.ralph/config.json', JSON.stringify({ gates: { basic: 'true' } }));
    const inside = { RALPH_ITERATION_TOKEN: 'it-1' };
    const refused = await ralph(ws, ['trust'], inside);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /refuses to run inside an agent iteration/);
    assert.equal(fs.existsSync(state), false, 'nothing recorded');
    const json = await ralph(ws, ['trust', '--json'], inside);
    assert.equal(json.code, 1);
    assert.equal(JSON.parse(json.stdout).success, false);
    assert.equal(
      (await ralph(ws, ['trust', '--show'], inside)).code,
      1,
      '--show reports (not trusted) from inside too',
    );
    assert.equal((await ralph(ws, ['trust'])).code, 0, 'the user, outside the run, trusts');
  });

  it('an agent found on PATH needs no trust: doctor asks it for its version in an untrusted workspace, and a configuration naming no program is run without trust', async () => {
    const ws = path.join(t.dir, 'ws');
    const marker = path.join(t.dir, 'path-claude-ran');
    markerAgent('bin/claude', marker);
    t.write('ws/RALPH_TASK.md', '- [ ] a\n');
    t.write('ws/.ralph/config.json', JSON.stringify({ gates: { basic: 'true' }, model: 'opus' }));
    const env = { PATH: `${path.join(t.dir, 'bin')}${path.delimiter}${path.dirname(process.execPath)}` };
    const doctor = await ralph(ws, ['doctor', '--json'], env);
    assert.equal(JSON.parse(doctor.stdout).trust.state, 'untrusted');
    assert.equal(
      fs.existsSync(marker),
      true,
      'the claude on PATH was asked for its version although the workspace is untrusted',
    );
    // Settings that name no program (model, caps) need no trust: past the trust check, run stops at the missing gates.
    t.write('ws/.ralph/config.json', JSON.stringify({ model: 'opus', maxIterations: 3 }));
    assert.equal(JSON.parse((await ralph(ws, ['trust', '--show', '--json'])).stdout).state, 'nothing');
    const run = await ralph(ws, ['run'], env);
    assert.doesNotMatch(run.stderr, /refused: the workspace configuration/);
    assert.match(run.stderr, /No gates configured/);
  });

  it('containment weakened to "marker" in .ralph/config.json asks for trust again (breaker-s5 row 31)', async () => {
    const ws = path.join(t.dir, 'ws');
    t.write('ws/.ralph/config.json', JSON.stringify({ gates: { basic: 'true' } }));
    assert.equal((await ralph(ws, ['trust'])).code, 0);
    t.write('ws/.ralph/config.json', JSON.stringify({ gates: { basic: 'true' }, containment: 'marker' }));
    const show = await ralph(ws, ['trust', '--show', '--json']);
    assert.equal(show.code, 1);
    assert.deepEqual(JSON.parse(show.stdout).diff, ['+ .ralph/config.json containment = "marker"']);
  });
});

describe('ralph trust covers the workspace files the gates run (scripts, package.json scripts, makefiles)', function () {
  this.timeout(120_000);
  let t: TempFolder;
  let state: string;
  beforeEach(() => {
    t = makeTempFolder('ralph-trust-files-');
    state = path.join(t.dir, 'state');
  });
  afterEach(() => t.dispose());
  const ralph = (folder: string, args: string[], env: NodeJS.ProcessEnv = {}) => ralphAt(state, folder, args, env);

  it('scripts/check.sh, package.json scripts.test or the Makefile rewritten after `ralph trust`: ralph run refuses, naming the file; trust --show and doctor list what is and is not covered', async () => {
    const ws = path.join(t.dir, 'ws');
    t.write('ws/RALPH_TASK.md', '- [ ] a\n');
    t.write('ws/scripts/check.sh', 'test -f done.txt\n');
    t.write('ws/package.json', JSON.stringify({ scripts: { test: 'node scripts/verify.js' } }));
    t.write('ws/scripts/verify.js', 'process.exit(1)\n');
    t.write('ws/Makefile', 'check:\n\tfalse\n');
    t.write(
      'ws/.ralph/config.json',
      JSON.stringify({
        claudePath: './missing-claude',
        gates: { basic: 'bash scripts/check.sh', full: 'npm test && cargo test', final: 'make check' },
      }),
    );
    const show = await ralph(ws, ['trust', '--show']);
    assert.match(
      show.stdout,
      /Files the trusted commands run[^\n]*\n {2}scripts\/check\.sh {2}\(bash scripts\/check\.sh\)/,
    );
    assert.match(show.stdout, /package\.json scripts\.test {2}\(npm test\)/);
    assert.match(show.stdout, /scripts\/verify\.js {2}\(node scripts\/verify\.js\)/);
    assert.match(show.stdout, /Makefile {2}\(make check\)/);
    assert.match(show.stdout, /Not covered[^\n]*\n {2}cargo: a program outside the workspace/);
    const doctor = JSON.parse((await ralph(ws, ['doctor', '--json'], { PATH: path.dirname(process.execPath) })).stdout);
    assert.deepEqual(
      doctor.trust.coverage.covered.map((c: { key: string }) => c.key),
      ['scripts/check.sh', '.npmrc', 'package.json scripts.test', 'Makefile', 'scripts/verify.js'],
    );
    assert.match(
      (await ralph(ws, ['doctor'], { PATH: path.dirname(process.execPath) })).stdout,
      /Files the trusted commands run/,
    );
    assert.equal((await ralph(ws, ['trust'])).code, 0);

    const attacks: [string, string, string][] = [
      ['scripts/check.sh', 'exit 0\n', 'scripts/check.sh'],
      ['package.json', JSON.stringify({ scripts: { test: 'true' } }), 'package.json scripts.test'],
      ['scripts/verify.js', 'process.exit(0)\n', 'scripts/verify.js'],
      ['Makefile', 'check:\n\ttrue\n', 'Makefile'],
    ];
    for (const [file, text, key] of attacks) {
      const before = fs.readFileSync(path.join(ws, file), 'utf8');
      fs.writeFileSync(path.join(ws, file), text);
      const refused = await ralph(ws, ['run']);
      assert.equal(refused.code, 1, file);
      assert.match(refused.stderr, /`ralph run` refused: .*changed since you trusted it/, file);
      assert.ok(refused.stderr.includes(`+ workspace file ${key}`), refused.stderr);
      assert.ok(refused.stderr.includes(`- workspace file ${key}`), refused.stderr);
      assert.match(refused.stderr, /run `ralph trust`/);
      assert.equal(fs.existsSync(path.join(ws, '.ralph', 'runs')), false, 'no run was created');
      fs.writeFileSync(path.join(ws, file), before);
    }
    // Put back, it is the trusted content again: past the trust check, the run stops at the missing agent.
    assert.match((await ralph(ws, ['run'])).stderr, /The claude CLI was not found/);
  });
});

describe('ralph run with the real claude: the gate weakened between runs, the next run refuses; agentArgs are redacted', function () {
  this.timeout(180_000);
  let ws: Workspace | undefined;
  afterEach(() => ws?.cleanup());

  it('the agent rewrites scripts/check.sh (the trusted gate `bash scripts/check.sh`) to `exit 0` during the run: the gate is not run, the item is not recorded done, the run ends failed naming the file', async () => {
    ws = makeWorkspace(
      {
        'RALPH_TASK.md': '- [ ] A\n',
        'scripts/check.sh': 'test -f done.txt\n',
        '.ralph/config.json':
          JSON.stringify(
            { gates: { basic: 'bash scripts/check.sh' }, timing: { betweenIterationsMs: 50, killGraceMs: 1000 } },
            null,
            2,
          ) + '\n',
      },
      { git: false },
    );
    const server = await startModelServer([
      bash(`printf 'exit 0\\n' > scripts/check.sh && sed -i 's/- \\[ \\] A/- [x] A/' RALPH_TASK.md && echo edited`),
      say('Done.'),
    ]);
    try {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        ...agentEnv(ws, server),
        XDG_STATE_HOME: path.join(ws.root, 'state'),
        RALPH_TRUST: '',
        PATH: `${path.dirname(claudeBinary)}${path.delimiter}${process.env.PATH}`,
      };
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
      const run = (args: string[]) => runCliAsync(ws!.dir, args, env);
      assert.equal((await run(['trust'])).code, 0);
      const r = await run(['run']);
      assert.equal(ws.read('scripts/check.sh'), 'exit 0\n', 'the agent did rewrite the gate script');
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.equal(ws.read('RALPH_TASK.md'), '- [ ] A\n', 'the unverified tick was put back');
      assert.match(r.stdout, /gate files changed during the run:\n\s+- workspace file scripts\/check\.sh sha256:/);
      assert.match(
        r.stdout,
        /the basic gate was not run: a file the gates run changed during the run \(scripts\/check\.sh\)/,
      );
      const runDir = fs.readdirSync(ws.file('.ralph/runs'))[0]!;
      const events = ws
        .read(`.ralph/runs/${runDir}/events.jsonl`)
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { type: string; message?: string; reason?: string; state?: string });
      assert.equal(events.filter((e) => e.type === 'gateStarted').length, 0, 'the changed gate never ran');
      assert.equal(events.filter((e) => e.type === 'verified').length, 0);
      assert.ok(events.some((e) => e.type === 'warning' && /gate files changed during the run/.test(e.message ?? '')));
      const end = events.find((e) => e.type === 'runEnded')!;
      assert.equal(end.state, 'failed');
      assert.match(end.reason ?? '', /scripts\/check\.sh.*ralph trust/);
      // The next run refuses: the file is no longer what was trusted.
      const next = await run(['run']);
      assert.equal(next.code, 1);
      assert.match(next.stderr, /\+ workspace file scripts\/check\.sh sha256:/);
    } finally {
      await server.close();
    }
  });

  it('gates.basic rewritten to true after a trusted run (a git pull; the guard denies the agent itself writing .ralph/): the next run refuses and prints the change; no agentArgs value is in the records', async () => {
    const secret = 'sk-ant-api03-TRUSTTESTSECRET';
    ws = makeWorkspace(
      {
        'RALPH_TASK.md': '- [ ] A\n',
        '.ralph/config.json':
          JSON.stringify(
            {
              agentArgs: ['--append-system-prompt', secret],
              gates: { basic: 'test -f done.txt' },
              timing: { betweenIterationsMs: 50, killGraceMs: 1000 },
            },
            null,
            2,
          ) + '\n',
      },
      { git: false },
    );
    const server = await startModelServer([
      bash(`touch done.txt && sed -i 's/- \\[ \\] A/- [x] A/' RALPH_TASK.md && echo edited`),
      say('Done.'),
    ]);
    try {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        ...agentEnv(ws, server),
        XDG_STATE_HOME: path.join(ws.root, 'state'),
        RALPH_TRUST: '',
        PATH: `${path.dirname(claudeBinary)}${path.delimiter}${process.env.PATH}`,
      };
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
      // Asynchronous: the scripted model server answers from this process.
      const run = (args: string[]) => runCliAsync(ws!.dir, args, env);
      assert.equal((await run(['trust'])).code, 0);
      const first = await run(['run']);
      assert.equal(first.code, 0, first.stdout + first.stderr);
      // What an agent is denied (the guard keeps it out of .ralph/), a git pull can do.
      ws.write(
        '.ralph/config.json',
        ws.read('.ralph/config.json').replace('"basic": "test -f done.txt"', '"basic": "true"'),
      );

      ws.write('RALPH_TASK.md', '- [x] A\n- [ ] B\n');
      const second = await run(['run']);
      assert.equal(second.code, 1);
      assert.match(second.stderr, /changed since you trusted it/);
      assert.match(
        second.stderr,
        /- \.ralph\/config\.json gates\.basic = "test -f done\.txt"\n\s+\+ \.ralph\/config\.json gates\.basic = "true"/,
      );
      assert.equal(fs.readdirSync(ws.file('.ralph/runs')).length, 1, 'the second run never started');

      const activity = ws.read('.ralph/activity.log');
      const runDir = fs.readdirSync(ws.file('.ralph/runs'))[0]!;
      const events = ws.read(`.ralph/runs/${runDir}/events.jsonl`);
      assert.match(activity, /SESSION START: .*--append-system-prompt «redacted»/);
      for (const text of [activity, events, first.stdout]) assert.doesNotMatch(text, /TRUSTTESTSECRET/);
      // Nowhere else either: no file ralph wrote (run.json, progress.txt, the raw agent stream, the state folder's
      // trust record and baselines), and no reader of the records (`ralph watch` — the dashboard follows the same
      // events.jsonl —, `ralph status`).
      const written = (dir: string): string[] =>
        fs.existsSync(dir)
          ? fs
              .readdirSync(dir, { recursive: true, withFileTypes: true })
              .filter((d) => d.isFile())
              .map((d) => path.join(d.parentPath, d.name))
          : [];
      const files = [...written(ws.file('.ralph')), ...written(path.join(ws.root, 'state'))].filter(
        (f) => f !== ws!.file('.ralph/config.json'),
      );
      assert.ok(
        files.some((f) => f.endsWith('run.json')) && files.some((f) => f.endsWith('progress.txt')),
        files.join('\n'),
      );
      for (const f of files) assert.doesNotMatch(fs.readFileSync(f, 'latin1'), /TRUSTTESTSECRET/, f);
      const readers = await Promise.all(
        [['watch', '--run', runDir], ['watch', '--run', runDir, '--json'], ['status', '--json'], ['status']].map(
          (args) => run(args),
        ),
      );
      assert.match(readers[0]!.stdout, /SESSION START: .*--append-system-prompt «redacted»/);
      for (const r of readers) assert.doesNotMatch(r.stdout + r.stderr, /TRUSTTESTSECRET/);
    } finally {
      await server.close();
    }
  });
});
