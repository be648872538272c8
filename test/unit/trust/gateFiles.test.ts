import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { gateFileRefs, userRcFiles, type GateFileRef } from '../../../src/core/trust/gateFiles';
import { gateFileEntries, gateFilesChangedReason, snapshotGateFiles } from '../../../src/core/trust/gateFileContent';
import { checkWorkspaceTrust, trustWorkspace } from '../../../src/core/trust/workspaceTrust';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/** A ref as one short string: `file scripts/check.sh`, `script package.json test`, `first Makefile`. */
function show(r: GateFileRef): string {
  if (r.kind === 'file') return `file ${r.path}`;
  if (r.kind === 'packageScript') return `script ${r.manifest} ${r.script}`;
  return `first ${r.candidates.join('|')}`;
}
const refsOf = (command: string, root: string | null = '/ws') => gateFileRefs(command, { root }).refs.map(show);

describe('the workspace files a gate command runs (gateFileRefs)', () => {
  const table: [string, string[]][] = [
    ['bash scripts/check.sh', ['file scripts/check.sh']],
    ['sh -e ./scripts/check.sh --fast', ['file scripts/check.sh']],
    ['./test.sh', ['file test.sh']],
    ['scripts/x && ./y || z/w', ['file scripts/x', 'file y', 'file z/w']],
    ['/ws/bin/gate', ['file bin/gate']],
    ['/usr/bin/true', []],
    ['../outside.sh', []],
    ['node scripts/verify.js', ['file scripts/verify.js']],
    ['node --require ./setup.js --max-old-space-size=4096 scripts/verify.mjs a b', ['file scripts/verify.mjs']],
    ['tsx test/run.ts', ['file test/run.ts']],
    ['python3 -u tools/check.py', ['file tools/check.py']],
    ['python -m pytest', []],
    ['node --test test/', []],
    ['node --run check', ['script package.json check']],
    ['ruby t.rb; perl t.pl; php t.php', ['file t.rb', 'file t.pl', 'file t.php']],
    ['deno run -A check.ts', ['file check.ts']],
    // The package manager's rc files change what a script entry runs (`script-shell`, breaker-s5 row 17): covered.
    ['npm test', ['file .npmrc', 'script package.json test']],
    ['npm t', ['file .npmrc', 'script package.json test']],
    ['npm run lint -- --fix', ['file .npmrc', 'script package.json lint']],
    ['npm run-script build', ['file .npmrc', 'script package.json build']],
    ['npm --prefix web test', ['file web/.npmrc', 'file .npmrc', 'script web/package.json test']],
    ['npm ci', ['file .npmrc']],
    ['npx jest', ['file .npmrc']],
    ['yarn lint', ['file .npmrc', 'file .yarnrc', 'file .yarnrc.yml', 'script package.json lint']],
    ['yarn run check', ['file .npmrc', 'file .yarnrc', 'file .yarnrc.yml', 'script package.json check']],
    [
      'pnpm -C app test',
      [
        'file app/.npmrc',
        'file app/pnpm-workspace.yaml',
        'file app/.pnpmfile.cjs',
        'file .npmrc',
        'file pnpm-workspace.yaml',
        'file .pnpmfile.cjs',
        'script app/package.json test',
      ],
    ],
    ['bun run check', ['file .npmrc', 'file bunfig.toml', 'script package.json check']],
    ['make check', ['first GNUmakefile|makefile|Makefile']],
    ['make -C sub -j4 test', ['first sub/GNUmakefile|sub/makefile|sub/Makefile']],
    ['make -f build/ci.mk all', ['file build/ci.mk']],
    ['just test', ['first justfile|Justfile|.justfile']],
    ['source env.sh && ./run', ['file env.sh', 'file run']],
    ['. ./env.sh', ['file env.sh']],
    ['bash -c "./inner.sh && npm test"', ['file inner.sh', 'file .npmrc', 'script package.json test']],
    ['env CI=1 FOO=bar ./gate.sh', ['file gate.sh']],
    ['timeout 300 bash scripts/check.sh', ['file scripts/check.sh']],
    ['time nice -n 5 ./gate', ['file gate']],
    ['cd sub && ./t.sh && bash ../top.sh', ['file sub/t.sh', 'file top.sh']],
    ['OUT=$(./probe.sh) && test -n "$OUT"', ['file probe.sh']],
    ['if [ -f x ]; then ./a.sh; else ./b.sh; fi | tee log', ['file a.sh', 'file b.sh']],
    ['./t.sh; ./t.sh', ['file t.sh']],
    ['true', []],
    ['cargo test && go test ./...', []],
  ];
  for (const [command, want] of table) {
    it(`${command} → ${want.join(', ') || 'no workspace file'}`, () => assert.deepEqual(refsOf(command), want));
  }

  const notes: [string, RegExp][] = [
    ['cargo test', /^cargo: a program outside the workspace/],
    ['/usr/bin/gate', /^\/usr\/bin\/gate: outside the workspace/],
    ['python -m pytest', /^python -m: runs no file/],
    ['bash "$SCRIPT"', /computed at run time/],
    ['$RUNNER check', /computed at run time/],
    ['bash -c', /^$/],
    ['npm test &&', /does not parse/],
    ['bash', /reads its script from standard input/],
  ];
  for (const [command, want] of notes) {
    it(`reports what ${command} runs that is not covered`, () => {
      const u = gateFileRefs(command, { root: '/ws' }).uncovered;
      if (want.source === '^$') assert.deepEqual(u, []);
      else
        assert.ok(
          u.some((n) => want.test(n)),
          u.join(' / '),
        );
    });
  }

  it('counts every absolute path as outside when no root is given', () =>
    assert.deepEqual(refsOf('/ws/bin/gate', null), []));
  it('covers builtins with nothing and no note', () =>
    assert.deepEqual(gateFileRefs('true && echo ok && exit 0'), { refs: [], uncovered: [] }));
});

describe('reading the gate files into the trusted content', () => {
  let t: TempFolder;
  let env: NodeJS.ProcessEnv;
  const ws = () => path.join(t.dir, 'ws');
  beforeEach(() => {
    t = makeTempFolder('ralph-gatefiles-');
    t.write('ws/RALPH_TASK.md', '- [ ] a\n');
    t.write('ws/scripts/check.sh', 'npm run build && npm test\n');
    t.write(
      'ws/package.json',
      JSON.stringify({
        name: 'x',
        scripts: { test: 'node scripts/verify.js', pretest: 'echo pre', lint: 'eslint .' },
        dependencies: {},
      }),
    );
    t.write('ws/scripts/verify.js', 'process.exit(1)\n');
    t.write('ws/Makefile', 'check:\n\t./gate.sh\n');
    env = { XDG_STATE_HOME: path.join(t.dir, 'state'), HOME: path.join(t.dir, 'home') };
  });
  afterEach(() => t.dispose());

  it('hashes files, shows package.json scripts (pre/post too) and follows them to the files they run', async () => {
    const { entries, coverage } = await gateFileEntries(ws(), [
      'bash scripts/check.sh',
      'npm test',
      'make check',
      './missing.sh',
    ]);
    assert.deepEqual(
      entries.map((e) => e.key),
      ['scripts/check.sh', '.npmrc', 'package.json scripts.test', 'Makefile', 'missing.sh', 'scripts/verify.js'],
    );
    assert.match(String(entries[0]!.value), /^sha256:[0-9a-f]{64}$/);
    assert.equal(entries[1]!.value, 'missing');
    assert.equal(entries[2]!.value, '= "pretest: echo pre ; node scripts/verify.js"');
    assert.equal(entries[4]!.value, 'missing');
    assert.deepEqual(
      coverage.covered.map((c) => c.via),
      [
        'bash scripts/check.sh',
        'npm (its configuration)',
        'npm test',
        'make check',
        './missing.sh',
        'node scripts/verify.js',
      ],
    );
  });

  it('makes a rewritten gate script, script entry or makefile a change of trust; a new dependency is not', async () => {
    t.write(
      'ws/.ralph/config.json',
      JSON.stringify({ gates: { basic: 'bash scripts/check.sh', full: 'npm test', final: 'make check' } }),
    );
    await trustWorkspace(ws(), { env });
    assert.equal((await checkWorkspaceTrust(ws(), null, env)).state, 'trusted');
    const pkg = JSON.parse(fs.readFileSync(path.join(ws(), 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      scripts: Record<string, string>;
    };
    pkg.dependencies.leftpad = '1.0.0';
    t.write('ws/package.json', JSON.stringify(pkg, null, 2));
    assert.equal(
      (await checkWorkspaceTrust(ws(), null, env)).state,
      'trusted',
      'package.json outside its scripts is not covered',
    );
    const attacks: [string, () => void][] = [
      ['scripts/check.sh', () => t.write('ws/scripts/check.sh', 'exit 0\n')],
      [
        'package.json scripts.test',
        () => t.write('ws/package.json', JSON.stringify({ ...pkg, scripts: { ...pkg.scripts, test: 'true' } })),
      ],
      ['Makefile', () => t.write('ws/Makefile', 'check:\n\ttrue\n')],
      ['scripts/verify.js', () => t.write('ws/scripts/verify.js', 'process.exit(0)\n')],
    ];
    for (const [what, attack] of attacks) {
      const before = fs.readFileSync(path.join(ws(), what.split(' ')[0]!));
      attack();
      const v = await checkWorkspaceTrust(ws(), null, env);
      assert.equal(v.state, 'changed', what);
      assert.equal(v.allowed, false, what);
      assert.ok(
        v.diff.some((l) => l.startsWith(`+ workspace file ${what}`)),
        `${what}: ${v.diff.join(' / ')}`,
      );
      fs.writeFileSync(path.join(ws(), what.split(' ')[0]!), before);
      assert.equal((await checkWorkspaceTrust(ws(), null, env)).state, 'trusted', `${what} restored`);
    }
  });

  it('makes a new or rewritten .npmrc a change of trust when a gate runs npm (breaker-s5 row 17: script-shell=/bin/true)', async () => {
    t.write('ws/.ralph/config.json', JSON.stringify({ gates: { basic: 'npm test' } }));
    await trustWorkspace(ws(), { env });
    t.write('ws/.npmrc', 'script-shell=/bin/true\n');
    const v = await checkWorkspaceTrust(ws(), null, env);
    assert.equal(v.state, 'changed');
    assert.deepEqual(
      v.diff.map((l) => l.replace(/sha256:\w+/, 'sha256:…')),
      ['- workspace file .npmrc missing', '+ workspace file .npmrc sha256:…'],
    );
    await trustWorkspace(ws(), { env });
    t.write('ws/.npmrc', 'script-shell=/bin/sh\n');
    assert.equal((await checkWorkspaceTrust(ws(), null, env)).state, 'changed', 'a rewritten .npmrc too');
  });

  it('reports what is covered and what is not with the verdict', async () => {
    t.write(
      'ws/.ralph/config.json',
      JSON.stringify({ gates: { basic: 'cargo test && ./scripts/check.sh' }, notify: 'notify-send done' }),
    );
    const v = await checkWorkspaceTrust(ws(), null, env);
    assert.ok(v.coverage.covered.some((c) => c.key === 'scripts/check.sh'));
    assert.ok(v.coverage.uncovered.some((n) => n.startsWith('cargo:')));
    assert.ok(v.coverage.uncovered.some((n) => n.startsWith('notify-send:')));
  });

  it('a snapshot reports a file changed after it was taken, and nothing when it was put back', async () => {
    const snap = await snapshotGateFiles(ws(), ['bash scripts/check.sh']);
    assert.deepEqual(await snap.changed(), []);
    t.write('ws/scripts/check.sh', 'exit 0\n');
    const d = await snap.changed();
    assert.equal(d.length, 2);
    assert.match(d[0]!, /^- workspace file scripts\/check\.sh sha256:/);
    t.write('ws/scripts/check.sh', 'npm run build && npm test\n');
    assert.deepEqual(await snap.changed(), []);
  });
});

/** breaker-s6 row 37: the user-level rc files of the package managers a gate runs (outside the workspace). */
describe('the user-level package-manager rc files (userRcFiles)', () => {
  const home = '/home/me';
  const table: { name: string; managers: string[]; env: Record<string, string>; files: string[] }[] = [
    { name: 'npm: ~/.npmrc', managers: ['npm'], env: {}, files: ['/home/me/.npmrc'] },
    {
      name: 'npm with NPM_CONFIG_USERCONFIG (relative: against the workspace) and a global config',
      managers: ['npm'],
      env: { NPM_CONFIG_USERCONFIG: 'conf/npmrc', NPM_CONFIG_GLOBALCONFIG: '/etc/npmrc' },
      files: ['/home/me/.npmrc', '/ws/conf/npmrc', '/etc/npmrc'],
    },
    {
      name: 'yarn: ~/.npmrc, ~/.yarnrc, ~/.yarnrc.yml',
      managers: ['yarn'],
      env: {},
      files: ['/home/me/.npmrc', '/home/me/.yarnrc', '/home/me/.yarnrc.yml'],
    },
    {
      name: 'pnpm: ~/.config/pnpm/rc',
      managers: ['pnpm'],
      env: {},
      files: ['/home/me/.npmrc', '/home/me/.config/pnpm/rc'],
    },
    {
      name: 'pnpm with XDG_CONFIG_HOME',
      managers: ['pnpm'],
      env: { XDG_CONFIG_HOME: '/x' },
      files: ['/home/me/.npmrc', '/x/pnpm/rc'],
    },
    {
      name: 'bun: ~/.bunfig.toml and the XDG one',
      managers: ['bun'],
      env: {},
      files: ['/home/me/.npmrc', '/home/me/.bunfig.toml', '/home/me/.config/.bunfig.toml'],
    },
    { name: 'two managers: each file once', managers: ['npm', 'npx'], env: {}, files: ['/home/me/.npmrc'] },
    { name: 'no package manager: none', managers: ['make', 'bash'], env: {}, files: [] },
  ];
  for (const c of table) it(c.name, () => assert.deepEqual(userRcFiles(c.managers, c.env, home, '/ws'), c.files));

  it('a change of ~/.npmrc during the run is a changed gate file, named in the reason (the run stops before the gate)', async () => {
    const t = makeTempFolder('ralph-userrc-');
    try {
      t.write('ws/package.json', JSON.stringify({ name: 'x', scripts: { test: 'exit 1' } }));
      const opts = { env: {}, home: path.join(t.dir, 'home') };
      const snap = await snapshotGateFiles(path.join(t.dir, 'ws'), ['npm test'], opts);
      assert.ok(snap.lines.includes(`user file ${path.join(t.dir, 'home', '.npmrc')} missing`), snap.lines.join('\n'));
      t.write('home/.npmrc', 'script-shell=/bin/true\n');
      const d = await snap.changed();
      assert.equal(d.length, 2);
      assert.match(
        gateFilesChangedReason('basic', d),
        new RegExp(`changed during the run \\(${path.join(t.dir, 'home', '.npmrc').replace(/[.]/g, '\\.')}\\)`),
      );
      fs.rmSync(path.join(t.dir, 'home', '.npmrc'));
      assert.deepEqual(await snap.changed(), [], 'put back: no change');
      const make = await snapshotGateFiles(path.join(t.dir, 'ws'), ['make check'], opts);
      assert.ok(
        !make.lines.some((l) => l.startsWith('user file')),
        'a gate without a package manager reads no user rc file',
      );
    } finally {
      t.dispose();
    }
  });
});
