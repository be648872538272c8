import * as assert from 'node:assert/strict';
import { isTaskCommand, isWavesCheck, leadingCwd, matchFastCommand, matchWavesCheck } from '../../../src/cli/fastArgs';

/** The one reader of the leading folder option: a missing, empty or dash value leaves the line to commander. */
describe('leadingCwd', () => {
  const table: [string[], ReturnType<typeof leadingCwd>][] = [
    [[], { at: 0 }],
    [['status'], { at: 0 }],
    [['-C', '/w', 'status'], { cwd: '/w', at: 2 }],
    [['--cwd', 'w'], { cwd: 'w', at: 2 }],
    [['--cwd=/w', 'x'], { cwd: '/w', at: 1 }],
    [['-C'], undefined],
    [['-C', ''], undefined],
    [['--cwd', '-x'], undefined],
    [['--cwd='], undefined],
  ];
  for (const [args, out] of table) it(JSON.stringify(args), () => assert.deepEqual(leadingCwd(args), out));
});

/** The command lines dist/cli.js answers without the full program; everything else goes to commander. */
describe('matchFastCommand', () => {
  const table: [string[], ReturnType<typeof matchFastCommand>][] = [
    [['status'], { command: 'status', json: false }],
    [['status', '--json'], { command: 'status', json: true }],
    [['next', '--json'], { command: 'next', json: true }],
    [['-C', '/w', 'status', '--json'], { command: 'status', json: true, cwd: '/w' }],
    [['--cwd', 'w', 'next'], { command: 'next', json: false, cwd: 'w' }],
    [['--cwd=/w', 'status'], { command: 'status', json: false, cwd: '/w' }],
    [['status', '--json', '--json'], undefined],
    [['status', '--help'], undefined],
    [['status', '--jsn'], undefined],
    [['next', '--epic', 'fn-1'], undefined],
    [['status', '-C', '/w'], undefined],
    [['-C'], undefined],
    [['-C', '--json', 'status'], undefined],
    [['--cwd=', 'status'], undefined],
    [['-C', '', 'status'], undefined],
    [['task', 'reset', 'x'], undefined],
    [[], undefined],
    [['--version'], undefined],
  ];
  for (const [args, out] of table) it(args.join(' ') || '(none)', () => assert.deepEqual(matchFastCommand(args), out));
});

/** The command lines dist/cli.js hands to the waves program (dist/cli-waves.js) instead of the full one. */
describe('isWavesCheck', () => {
  const table: [string[], boolean][] = [
    [['waves', 'check', '--phase', 'p'], true],
    [['-C', '/w', 'waves', 'check', '--phase', 'p', '--json'], true],
    [['--cwd=/w', 'waves', 'check'], true],
    [['--cwd', 'w', 'waves', 'check', '--watch'], true],
    [['waves', 'check', '--help'], false],
    [['waves', 'check', '-h'], false],
    [['waves', 'check', '--version'], false],
    [['waves'], false],
    [['waves', '--help'], false],
    [['status', '--json'], false],
    [['-C', '/w', 'status', 'waves', 'check'], false],
    [[], false],
  ];
  for (const [args, out] of table) it(args.join(' ') || '(none)', () => assert.equal(isWavesCheck(args), out));
});

/** The `waves check` command lines dist/cli.js runs without commander; `undefined` sends the line to the full program. */
describe('matchWavesCheck', () => {
  const base = { root: [], json: false, watch: false };
  const table: [string[], unknown][] = [
    [['waves', 'check', '--phase', 'p'], { ...base, phase: 'p' }],
    [['-C', '/w', 'waves', 'check', '--phase', 'p', '--json'], { ...base, cwd: '/w', phase: 'p', json: true }],
    [['--cwd=/w', 'waves', 'check', '--phase=1.5.0', '--wave=W1'], { ...base, cwd: '/w', phase: '1.5.0', wave: 'W1' }],
    [
      ['--cwd', 'w', 'waves', 'check', '--watch', '--phase', 'p', '--root', 'a', '--root=b'],
      { ...base, cwd: 'w', phase: 'p', root: ['a', 'b'], watch: true },
    ],
    [
      ['waves', 'check', '--phase', 'p', '--orphan-after-ms', '1000', '--inactive-after-ms=0'],
      { ...base, phase: 'p', orphanAfterMs: '1000', inactiveAfterMs: '0' },
    ],
    // Values are handed on as written: wavesMain.ts checks them and hands a bad one to the full program.
    [['waves', 'check', '--phase', '../p', '--wave', '../W1'], { ...base, phase: '../p', wave: '../W1' }],
    // Everything else is the full program's: usage errors and help read the same as for any command.
    [['waves', 'check'], undefined],
    [['waves', 'check', '--phase'], undefined],
    [['waves', 'check', '--phase', ''], undefined],
    [['waves', 'check', '--phase='], undefined],
    [['waves', 'check', '--phase', '--json'], undefined],
    [['waves', 'check', '--phase', 'p', '--phase', 'q'], undefined],
    [['waves', 'check', '--phase', 'p', '--json', '--json'], undefined],
    [['waves', 'check', '--phase', 'p', '--json=1'], undefined],
    [['waves', 'check', '--phase', 'p', 'extra'], undefined],
    [['waves', 'check', '--phase', 'p', '--'], undefined],
    [['waves', 'check', '--phase', 'p', '--jsn'], undefined],
    [['waves', 'check', '--phase', 'p', '--orphan-after-ms', '1e3'], undefined],
    [['waves', 'check', '--phase', 'p', '--orphan-after-ms', '-1'], undefined],
    [['waves', 'check', '--phase', 'p', '--orphan-after-ms', ' 5'], undefined],
    [['waves', 'check', '--phase', 'p', '-C', '/w'], undefined],
    [['waves', 'check', '--phase', 'p', '--help'], undefined],
    [['waves', 'check', '--phase', 'p', '-V'], undefined],
    [['-C', '--json', 'waves', 'check', '--phase', 'p'], undefined],
    [['-Cw', 'waves', 'check', '--phase', 'p'], undefined],
    [['--cwd=', 'waves', 'check', '--phase', 'p'], undefined],
    [['waves', 'list', '--phase', 'p'], undefined],
    [['waves', 'check', '--phase', 'p', '--constructor', 'x'], undefined],
    [['waves', 'check', '--phase', 'p', '--__proto__=x'], undefined],
  ];
  for (const [args, out] of table) it(args.join(' ') || '(none)', () => assert.deepEqual(matchWavesCheck(args), out));
});

/** The command lines dist/cli.js hands to the task program (dist/cli-task.js) instead of the full one. */
describe('isTaskCommand', () => {
  const table: [string[], boolean][] = [
    [['task', 'reset', 'fn-1.1', '--cascade', '--json'], true],
    [['-C', '/w', 'task', 'start', 'US-001'], true],
    [['--cwd=/w', 'task', 'done', 'fn-1.2', '--summary', 'x'], true],
    [['--cwd', 'w', 'task', 'block', 'fn-1.2', '--reason', 'r'], true],
    [['task', 'reset'], true],
    [['task', 'reset', 'fn-1.1', '--help'], false],
    [['task', 'start', 'x', '-h'], false],
    [['task', 'done', 'x', '-V'], false],
    [['task'], false],
    [['task', '--help'], false],
    [['task', 'frobnicate', 'x'], false],
    [['status', '--json'], false],
    [['-C', '/w', 'status', 'task', 'reset'], false],
    [[], false],
  ];
  for (const [args, out] of table) it(args.join(' ') || '(none)', () => assert.equal(isTaskCommand(args), out));
});
