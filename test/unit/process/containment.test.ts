import * as assert from 'node:assert/strict';
import {
  containedCommand,
  containedExit,
  CONTAINMENT_INIT_NAME,
  mountPlan,
  mountTable,
  parseLeftovers,
  protectionArgs,
  resolveContainment,
  resolveProtection,
  unshareCandidates,
  withPrefix,
} from '../../../src/core/process/containment';
import { environHolds } from '../../../src/core/process/processGroup';
import { modeAllowsWrite } from '../../../src/core/store/storageFailure';

describe('process containment: the pure parts (issue 12)', () => {
  it('tries a plain PID namespace as root, then a user namespace; only the user namespace otherwise', () => {
    assert.deepEqual(unshareCandidates(true), [
      ['--pid', '--fork', '--kill-child', '--mount-proc'],
      ['--user', '--map-current-user', '--pid', '--fork', '--kill-child', '--mount-proc'],
    ]);
    assert.deepEqual(unshareCandidates(false), [
      ['--user', '--map-current-user', '--pid', '--fork', '--kill-child', '--mount-proc'],
    ]);
  });

  it('"marker" never probes and says why', () => {
    assert.deepEqual(resolveContainment('marker'), {
      kind: 'marker',
      detail: 'environment marker sweep (config containment: "marker")',
    });
  });

  it('wraps a command as unshare … bash -c INIT ralph-init <ticks> <report> <file> <args…>', () => {
    const c = containedCommand(
      { kind: 'pid-namespace', unshareArgs: ['--pid', '--fork'], detail: '' },
      '/bin/claude',
      ['-p', 'x y'],
      { graceMs: 3000, token: 'T', report: false },
    );
    assert.equal(c.file, 'unshare');
    assert.deepEqual(
      [c.args.slice(0, 4), c.args.slice(5)],
      [
        ['--pid', '--fork', 'bash', '-c'],
        [CONTAINMENT_INIT_NAME, '60', '-', '/bin/claude', '-p', 'x y'],
      ],
    );
    assert.equal(c.reportFile, null);
    assert.match(
      containedCommand({ kind: 'pid-namespace', unshareArgs: [], detail: '' }, 'x', [], {
        graceMs: 1,
        token: 'T',
        report: true,
      }).reportFile!,
      /ralph-leftovers-T$/,
    );
  });

  it('starts unshare through the parent-death prefix when given (issue 11, breaker-s5 35), unchanged without', () => {
    const c = containedCommand({ kind: 'pid-namespace', unshareArgs: ['--pid'], detail: '' }, '/bin/claude', ['-p'], {
      graceMs: 50,
      token: 'T',
      report: false,
      deathPrefix: ['setpriv', '--pdeathsig', 'SIGKILL'],
    });
    assert.deepEqual([c.file, c.args.slice(0, 4)], ['setpriv', ['--pdeathsig', 'SIGKILL', 'unshare', '--pid']]);
    assert.deepEqual(c.args.slice(-2), ['/bin/claude', '-p']);
    const rows: [readonly string[] | null, { file: string; args: string[] }][] = [
      [null, { file: 'a', args: ['b'] }],
      [[], { file: 'a', args: ['b'] }],
      [['setpriv', '--pdeathsig', 'SIGKILL'], { file: 'setpriv', args: ['--pdeathsig', 'SIGKILL', 'a', 'b'] }],
    ];
    for (const [prefix, want] of rows) assert.deepEqual(withPrefix(prefix, 'a', ['b']), want);
  });

  const exits: [number | null, string | null, number | null, string | null][] = [
    [0, null, 0, null],
    [1, null, 1, null],
    [128, null, 128, null],
    [143, null, null, 'SIGTERM'],
    [137, null, null, 'SIGKILL'],
    [130, null, null, 'SIGINT'],
    [255, null, 255, null],
    [null, 'SIGKILL', null, 'SIGKILL'],
  ];
  for (const [code, sig, wantCode, wantSig] of exits) {
    it(`a contained exit ${code}/${sig} reads as ${wantCode}/${wantSig}`, () =>
      assert.deepEqual(containedExit(code, sig), { exitCode: wantCode, signal: wantSig }));
  }

  it('parses the leftovers report: pid and process group per line, junk skipped', () => {
    assert.deepEqual(parseLeftovers('3 3\n4 0\nnope\n\n'), [
      { pid: 3, pgrp: 3 },
      { pid: 4, pgrp: 0 },
    ]);
  });
});

describe('protected paths: the mount plan and the namespaces of a protected iteration', () => {
  it('binds every ancestor onto itself outermost first, then the read-only paths, then the writable exceptions', () => {
    const plan = mountPlan(
      {
        readOnly: [{ path: '/w/p/.ralph' }, { path: '/h/.local/state/ralph' }, { path: '/w/p/.git/hooks' }],
        writable: [{ path: '/w/p/.ralph/handoff.md' }, { path: '/w/p/.ralph/missing' }],
      },
      (p) => !p.endsWith('missing'),
    );
    assert.deepEqual(plan, [
      'self:/h',
      'self:/w',
      'self:/h/.local',
      'self:/w/p',
      'self:/h/.local/state',
      'self:/w/p/.git',
      'ro:/w/p/.ralph',
      'ro:/h/.local/state/ralph',
      'ro:/w/p/.git/hooks',
      'rw:/w/p/.ralph/handoff.md',
    ]);
  });
  it('writes the plan as a mount table for one mount -a, in order, with fstab escapes', () => {
    const rows: [string[], string][] = [
      [[], ''],
      [['self:/w'], '/w /w none rbind 0 0\n'],
      [['ro:/w/p/.ralph/config.json'], '/w/p/.ralph/config.json /w/p/.ralph/config.json none bind,ro 0 0\n'],
      [
        ['rw:/w/p/.ralph/handoff.md'],
        '/w/p/.ralph/handoff.md /w/p/.ralph/handoff.md none bind 0 0\n' +
          '/w/p/.ralph/handoff.md /w/p/.ralph/handoff.md none remount,bind,rw 0 0\n',
      ],
      [['ro:/w/a b'], '/w/a\\040b /w/a\\040b none bind,ro 0 0\n'],
      [['ro:/w/a\tb\\c'], '/w/a\\011b\\134c /w/a\\011b\\134c none bind,ro 0 0\n'],
      [['self:/w', 'ro:/w/x', 'other:/w/y'], '/w /w none rbind 0 0\n/w/x /w/x none bind,ro 0 0\n'],
    ];
    for (const [plan, table] of rows) assert.equal(mountTable(plan), table, plan.join(' | '));
  });
  it('refuses a path with a newline (it cannot be passed to the init)', () => {
    assert.throws(() => mountPlan({ readOnly: [{ path: '/w/a\nb' }], writable: [] }, () => true), /newline/);
  });
  it('as root: a plain PID and mount namespace, the agent in a user namespace of its own uid 0', () => {
    assert.deepEqual(protectionArgs(0, 0), {
      outer: ['--pid', '--fork', '--kill-child', '--mount-proc'],
      inner: ['--user', '--map-user=0', '--map-group=0'],
    });
  });
  it('as a user: root of an outer user namespace to mount, the agent back at its own uid and gid inside', () => {
    assert.deepEqual(protectionArgs(1000, 100), {
      outer: ['--user', '--map-root-user', '--pid', '--fork', '--kill-child', '--mount-proc'],
      inner: ['--user', '--map-user=1000', '--map-group=100'],
    });
  });
  it('"marker" never probes and says not enforced here', () => {
    assert.match(resolveProtection('marker').detail, /^not enforced here/);
  });
});

describe('storage: write permission from the mode bits (issue 12; root ignores EACCES)', () => {
  const o = (uid: number, gid = 100) => ({ uid, gid, ownerUid: 1000, ownerGid: 100 });
  const rows: [string, number, ReturnType<typeof o>, boolean][] = [
    ['root, 0555', 0o555, o(0), false],
    ['root, 0755', 0o755, o(0), true],
    ['root, 0444 file', 0o444, o(0), false],
    ['owner, 0555', 0o555, o(1000), false],
    ['owner, 0755', 0o755, o(1000), true],
    ['group member, 0755', 0o755, o(2000, 100), false],
    ['group member, 0775', 0o775, o(2000, 100), true],
    ['other, 0757', 0o757, o(2000, 200), true],
    ['other, 0775', 0o775, o(2000, 200), false],
  ];
  for (const [name, mode, who, want] of rows)
    it(`${name}: ${want ? 'writable' : 'read-only'}`, () => assert.equal(modeAllowsWrite(mode, who), want));

  it('environHolds: a whole NAME=value entry of a /proc environ, never a part of one', () => {
    const env = (...entries: string[]) => Buffer.from(entries.map((e) => `${e}\0`).join(''), 'latin1');
    const rows: Array<[Buffer, string, boolean]> = [
      [env('A=1', 'RALPH_ITERATION_TOKEN=abc', 'B=2'), 'RALPH_ITERATION_TOKEN=abc', true],
      [env('RALPH_ITERATION_TOKEN=abc'), 'RALPH_ITERATION_TOKEN=abc', true], // first entry
      [Buffer.from('A=1\0RALPH_ITERATION_TOKEN=abc', 'latin1'), 'RALPH_ITERATION_TOKEN=abc', true], // no final NUL
      [env('RALPH_ITERATION_TOKEN=abcd'), 'RALPH_ITERATION_TOKEN=abc', false], // a longer value
      [env('XRALPH_ITERATION_TOKEN=abc'), 'RALPH_ITERATION_TOKEN=abc', false], // a longer name
      [env('X=RALPH_ITERATION_TOKEN=abc'), 'RALPH_ITERATION_TOKEN=abc', false], // inside another value
      [env('X=RALPH_ITERATION_TOKEN=abc', 'RALPH_ITERATION_TOKEN=abc'), 'RALPH_ITERATION_TOKEN=abc', true],
      [env('A=1'), 'RALPH_ITERATION_TOKEN=abc', false],
      [Buffer.alloc(0), 'RALPH_ITERATION_TOKEN=abc', false],
    ];
    for (const [environ, entry, want] of rows)
      assert.equal(environHolds(environ, Buffer.from(entry, 'latin1')), want, JSON.stringify([String(environ), entry]));
  });
});
