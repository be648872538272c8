import * as assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cliPath, runCliInProcess } from '../../support/cli';
import { makeTempFolder, testCacheHome, type TempFolder } from '../../support/tempFolder';
import { copyWaveWorkspace, snapshotFiles, writeCheckpoint, type WaveWorkspace } from '../../support/waveFixture';

const iso = (msAgo: number) => new Date(Date.now() - msAgo).toISOString();

/**
 * The commands run in this process (`runCliInProcess`, dist/cli.js's entry) where their output, exit code and files
 * are the point; as processes where the process is (the bundles a pass loads, a reader that goes away, `--watch`).
 */
describe('ralph waves check (dist/cli.js)', function () {
  // Only a hang bound: one test here ran the CLI 22 times as processes, over 60 s at a load average of 20.
  this.timeout(300_000);
  let ws: WaveWorkspace;
  beforeEach(() => {
    ws = copyWaveWorkspace();
  });
  afterEach(() => ws.dispose());

  it('prints the gate result as JSON and exits 1 for MEDIUM, leaving every checkpoint byte for byte', async () => {
    const before = snapshotFiles(path.join(ws.folder, '.ijfw'));
    const r = await runCliInProcess(ws.folder, [
      'waves',
      'check',
      '--phase',
      '1.5.0',
      '--wave',
      'W1',
      '--root',
      ws.worktree,
      '--json',
    ]);
    assert.equal(r.code, 1, r.stderr);
    const j = r.json() as {
      severity: string;
      findings: { subId: string; disposition: string; brief_path?: string }[];
      gate_result: { status: string };
      wave: { subagents: { sub_id: string }[] };
    };
    assert.equal(j.severity, 'MEDIUM');
    assert.equal(j.gate_result.status, 'FLAG');
    assert.ok(
      j.findings.some(
        (f) =>
          f.subId === 'W1-S12' && f.disposition === 'RESUMED' && f.brief_path === '.planning/1.5.0/resume-W1-S12.md',
      ),
    );
    assert.ok(fs.existsSync(path.join(ws.folder, '.planning', '1.5.0', 'resume-W1-S12.md')));
    assert.deepEqual(snapshotFiles(path.join(ws.folder, '.ijfw')), before);
  });

  it('prints text ending with the canonical gate-result block', async () => {
    const r = await runCliInProcess(ws.folder, ['waves', 'check', '--phase', 'p', '--wave', 'W2']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Wave W2 \(phase p\): PASS/);
    assert.match(r.stdout, /\n```gate-result\n\{[\s\S]*"status": "PASS"[\s\S]*\}\n```\n$/);
  });

  it('exits 0 for NOTE (only resumable orphans)', async () => {
    const t = makeTempFolder('ralph-waves-cli-');
    try {
      writeCheckpoint(t.dir, 'W7', 'W7-A', { schema_version: 1, ts: iso(300_000), next_step: 'finish it' });
      const r = await runCliInProcess(t.dir, ['waves', 'check', '--phase', 'p', '--json']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.json().severity, 'NOTE');
    } finally {
      t.dispose();
    }
  });

  it('takes the orphan windows from .ralph/config.json, and the flags over them', async () => {
    const t = makeTempFolder('ralph-waves-cfg-');
    try {
      writeCheckpoint(t.dir, 'W7', 'W7-A', { schema_version: 1, ts: iso(5_000), next_step: 'finish it' });
      assert.equal(
        (await runCliInProcess(t.dir, ['waves', 'check', '--phase', 'p', '--json'])).json().severity,
        'PASS',
      );
      t.write('.ralph/config.json', JSON.stringify({ waves: { orphanAfterMs: 1000, inactiveAfterMs: 2000 } }));
      assert.equal(
        (await runCliInProcess(t.dir, ['waves', 'check', '--phase', 'p', '--json'])).json().severity,
        'NOTE',
      );
      assert.equal(
        (
          await runCliInProcess(t.dir, ['waves', 'check', '--phase', 'p', '--json', '--inactive-after-ms', '600000'])
        ).json().severity,
        'PASS',
      );
    } finally {
      t.dispose();
    }
  });

  it('exits 2 for an invalid id, an unknown wave or root, and a missing --phase', async () => {
    assert.equal((await runCliInProcess(ws.folder, ['waves', 'check', '--phase', 'p', '--wave', '../W1'])).code, 2);
    assert.equal((await runCliInProcess(ws.folder, ['waves', 'check', '--phase', '../p'])).code, 2);
    assert.equal((await runCliInProcess(ws.folder, ['waves', 'check'])).code, 2);
    const unknown = await runCliInProcess(ws.folder, ['waves', 'check', '--phase', 'p', '--wave', 'W9', '--json']);
    assert.equal(unknown.code, 2);
    assert.deepEqual(unknown.json(), { success: false, error: 'no wave W9: .ijfw/wave-W9 not found' });
    assert.equal((await runCliInProcess(ws.folder, ['waves', 'check', '--phase', 'p', '--root', 'nowhere'])).code, 2);
  });

  it('the commander-free path and the full program print the same, usage errors included', async () => {
    // Times, ages, durations and the gate id's nonce differ between two runs; everything else must not.
    const norm = (s: string) =>
      s
        .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, 'T')
        .replace(/-[0-9a-f]{4}"/g, '-N"')
        .replace(/\d+/g, '0');
    const lines: string[][] = [
      ['waves', 'check', '--phase', '1.5.0', '--wave', 'W1', '--root', ws.worktree, '--json'],
      ['waves', 'check', '--phase', 'p', '--wave', 'W1'],
      ['waves', 'check', '--phase=p', '--wave=W2', '--json'],
      ['waves', 'check', '--phase', 'p', '--orphan-after-ms', '600000', '--inactive-after-ms', '600000', '--json'],
      ['waves', 'check', '--phase', 'p', '--wave', '../W1'],
      ['waves', 'check', '--phase', '../p', '--json'],
      ['waves', 'check', '--phase', 'p', '--wave', 'W9', '--json'],
      ['waves', 'check', '--phase', 'p', '--wave', 'W9'],
      ['waves', 'check', '--phase', 'p', '--root', 'nowhere'],
      ['waves', 'check'],
      ['waves', 'check', '--phase', 'p', '--jsn'],
    ];
    for (const args of lines) {
      const copies = [copyWaveWorkspace(), copyWaveWorkspace()];
      try {
        const a = args.map((x) => (x === ws.worktree ? copies[0]!.worktree : x));
        const b = args.map((x) => (x === ws.worktree ? copies[1]!.worktree : x));
        const fast = await runCliInProcess(copies[0]!.folder, a);
        const slow = await runCliInProcess(copies[1]!.folder, b, {}, { program: 'cli-main.js' });
        const same = (s: string, w: WaveWorkspace) =>
          norm(s.split(w.folder).join('<ws>').split(w.worktree).join('<wt>'));
        assert.deepEqual(
          [fast.code, same(fast.stdout, copies[0]!), same(fast.stderr, copies[0]!)],
          [slow.code, same(slow.stdout, copies[1]!), same(slow.stderr, copies[1]!)],
          args.join(' '),
        );
        const planning = (w: WaveWorkspace) =>
          fs.existsSync(path.join(w.folder, '.planning'))
            ? fs.readdirSync(path.join(w.folder, '.planning'), { recursive: true }).map(String).sort()
            : [];
        assert.deepEqual(planning(copies[0]!), planning(copies[1]!), args.join(' '));
      } finally {
        for (const c of copies) c.dispose();
      }
    }
    const missing = await runCliInProcess(path.join(ws.folder, 'nope'), ['waves', 'check', '--phase', 'p', '--json']);
    assert.deepEqual(
      [missing.code, (missing.json() as { error: string }).error],
      [1, `folder not found: ${path.join(ws.folder, 'nope')}`],
    );
  });

  it('a plain pass loads neither yaml, jsonc-parser nor chokidar; a pass that needs yaml or a positioned JSON error loads them', async () => {
    const t = makeTempFolder('ralph-waves-libs-');
    try {
      // Which of dist/'s files the process loaded, written at exit by a preloaded hook.
      const loaded = path.join(t.dir, 'loaded.json');
      const hook = t.write(
        'hook.js',
        `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(loaded)}, JSON.stringify(Object.keys(require.cache).map((f) => require('path').relative(${JSON.stringify(path.dirname(cliPath))}, f)).filter((f) => !f.startsWith('..')).sort())));`,
      );
      const run = () => {
        const r = spawnSync(
          process.execPath,
          ['-r', hook, cliPath, '-C', t.dir, 'waves', 'check', '--phase', 'p', '--json'],
          { encoding: 'utf8', env: { ...process.env, XDG_CACHE_HOME: testCacheHome() } },
        );
        return {
          code: r.status,
          json: JSON.parse(r.stdout) as {
            severity: string;
            findings: { subId: string; disposition: string }[];
            problems: { line: number; column: number }[];
          },
          loaded: JSON.parse(fs.readFileSync(loaded, 'utf8')) as string[],
        };
      };
      writeCheckpoint(t.dir, 'W1', 'W1-A', { schema_version: 1, ts: iso(600_000), next_step: 'resume me' });
      t.write('.ijfw/wave-W1/STATE.md', '---\nwave_id: W1\nstatus: in_progress\nsubagents:\n  - W1-A\n---\n');
      const plain = run();
      assert.deepEqual([plain.code, plain.json.findings.map((f) => f.subId)], [0, ['W1-A']]);
      assert.deepEqual(plain.loaded, ['cli-waves.js', 'cli.js']);
      // A block scalar is outside the flat subset (yaml parses it: the wave is over, so W1-A is RESOLVED), and an
      // unreadable checkpoint is reported at its line and column (jsonc-parser).
      t.write('.ijfw/wave-W1/STATE.md', '---\nwave_id: W1\nstatus: complete\nnote: |\n  two\n  lines\n---\n');
      writeCheckpoint(t.dir, 'W1', 'W1-B', '{\n  "ts": ,\n}');
      const both = run();
      assert.deepEqual(
        both.json.findings.map((f) => [f.subId, f.disposition]),
        [
          ['W1-A', 'RESOLVED'],
          ['W1-B', 'RESOLVED'],
        ],
      );
      assert.deepEqual(
        both.json.problems.map((p) => [p.line, p.column]),
        [[2, 9]],
      );
      assert.deepEqual(both.loaded, ['cli-waves.js', 'cli.js', 'jsonc-parser.js', 'yaml.js']);
    } finally {
      t.dispose();
    }
  });

  it('ends quietly with the exit code of the pass when the reader goes away (| head -c 100)', async () => {
    const t = makeTempFolder('ralph-waves-pipe-');
    try {
      // 1,500 subagents: far more output than a pipe holds, so the write fails with EPIPE; one STALE orphan: exit 1.
      for (let i = 0; i < 1500; i++)
        writeCheckpoint(t.dir, 'W1', `W1-S${i}`, { schema_version: 1, ts: iso(-3_600_000), next_step: 'x' });
      writeCheckpoint(t.dir, 'W1', 'W1-STALE', { schema_version: 1, ts: iso(600_000) });
      for (const form of ['--json', '']) {
        const r = spawnSync(
          'bash',
          [
            '-c',
            `set -o pipefail; export XDG_CACHE_HOME="${testCacheHome()}"; "${process.execPath}" "${cliPath}" -C "${t.dir}" waves check --phase p ${form} | head -c 100 >/dev/null`,
          ],
          { encoding: 'utf8' },
        );
        assert.equal(r.stderr, '', form);
        assert.equal(r.status, 1, form);
      }
    } finally {
      t.dispose();
    }
  });

  it('shows waves with their subagents in ralph status (text and --json)', async () => {
    const j = (await runCliInProcess(ws.folder, ['status', '--json'])).json() as {
      waves: { wave_id: string; subagents: { sub_id: string; disposition: string }[] }[];
    };
    const w1 = j.waves.find((w) => w.wave_id === 'W1')!;
    assert.equal(w1.subagents.find((s) => s.sub_id === 'W1-S4')!.disposition, 'RESOLVED');
    assert.equal(w1.subagents.find((s) => s.sub_id === 'W1-S1')!.disposition, 'RESUMED');
    const text = (await runCliInProcess(ws.folder, ['status'])).stdout;
    assert.match(text, /^Wave W1 \[in_progress\]: .*orphans/m);
    assert.match(text, /^ {2}W1-S1 RESUMED/m);
  });
});

/** A `ralph waves check --watch --json` process and the passes it prints. */
class Watch {
  readonly child: ChildProcess;
  readonly passes: { at: number; result: { severity: string; findings: { subId: string; disposition: string }[] } }[] =
    [];
  private waiters: (() => void)[] = [];
  constructor(folder: string, args: string[]) {
    this.child = spawn(process.execPath, [cliPath, '-C', folder, 'waves', 'check', '--watch', '--json', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let buf = '';
    this.child.stdout!.on('data', (d) => {
      buf += String(d);
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim()) this.passes.push({ at: Date.now(), result: JSON.parse(line) });
        for (const w of this.waiters.splice(0)) w();
      }
    });
  }
  /** Resolves when the watch has printed `n` passes; rejects when it exits first (the test's timeout bounds the wait). */
  async passCount(n: number): Promise<void> {
    while (this.passes.length < n) {
      if (this.child.exitCode !== null || this.child.signalCode !== null)
        throw new Error(
          `the watch exited (${this.child.exitCode ?? this.child.signalCode}) after ${this.passes.length} pass(es)`,
        );
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }
  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode;
    const done = new Promise<number | null>((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.child.kill('SIGINT');
    return done;
  }
}

describe('ralph waves check --watch (dist/cli.js)', function () {
  this.timeout(60_000);
  let t: TempFolder;
  let w: Watch | undefined;
  beforeEach(() => {
    t = makeTempFolder('ralph-waves-watch-');
  });
  afterEach(async () => {
    await w?.stop();
    w = undefined;
    t.dispose();
  });

  it('reacts to a new checkpoint (its speed: waves_watch_reaction_p95 in npm run bench)', async () => {
    writeCheckpoint(t.dir, 'W1', 'W1-A', { schema_version: 1, ts: iso(0), next_step: 'x' });
    w = new Watch(t.dir, ['--phase', 'p']);
    await w.passCount(1);
    assert.equal(w.passes[0]!.result.severity, 'PASS');
    writeCheckpoint(t.dir, 'W1', 'W1-B', { schema_version: 1, ts: iso(600_000), next_step: 'resume me' });
    await w.passCount(2);
    const second = w.passes[1]!;
    assert.deepEqual(
      second.result.findings.map((f) => [f.subId, f.disposition]),
      [['W1-B', 'RESUMED']],
    );
    assert.equal(await w.stop(), 0);
    assert.ok(t.exists('.planning/p/resume-W1-B.md'));
  });

  it('reports a checkpoint written right after the first pass, before the watcher is ready', async () => {
    // 500 subs: the watcher's first scan takes a while, and a checkpoint written meanwhile has no event of its own.
    for (let i = 0; i < 500; i++)
      writeCheckpoint(t.dir, 'W1', `W1-S${i}`, { schema_version: 1, ts: iso(-3_600_000), next_step: 'x' });
    w = new Watch(t.dir, ['--phase', 'p']);
    await w.passCount(1);
    assert.equal(w.passes[0]!.result.severity, 'PASS');
    writeCheckpoint(t.dir, 'W1', 'W1-LATE', { schema_version: 1, ts: iso(600_000), next_step: 'resume me' });
    await w.passCount(2);
    assert.deepEqual(
      w.passes[1]!.result.findings.map((f) => [f.subId, f.disposition]),
      [['W1-LATE', 'RESUMED']],
    );
  });

  it('reports a sub crossing its orphan window with no file event', async () => {
    writeCheckpoint(t.dir, 'W1', 'W1-A', { schema_version: 1, ts: iso(0), next_step: 'x' });
    // Windows of 2 s / 3 s: the first pass must come before the crossing even when a loaded machine takes a second
    // to start the process (400 / 700 ms failed under a load average of 20).
    w = new Watch(t.dir, ['--phase', 'p', '--orphan-after-ms', '2000', '--inactive-after-ms', '3000']);
    await w.passCount(1);
    assert.deepEqual(w.passes[0]!.result.findings, []);
    await w.passCount(2);
    assert.deepEqual(
      w.passes[1]!.result.findings.map((f) => [f.subId, f.disposition]),
      [['W1-A', 'RESUMED']],
    );
    const log = t.read('.planning/p/RALPH-LOG.md');
    assert.match(log, /— PASS \(no orphans in wave W1\)[\s\S]*— RESUMED W1-A/);
  });
});
