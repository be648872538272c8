import * as assert from 'node:assert/strict';
import { matchFastCommand } from '../../../src/cli/fastArgs';

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
    [['task', 'reset', 'x'], undefined],
    [[], undefined],
    [['--version'], undefined],
  ];
  for (const [args, out] of table) it(args.join(' ') || '(none)', () => assert.deepEqual(matchFastCommand(args), out));
});
