import { strict as assert } from 'node:assert';
import * as path from 'node:path';
import {
  discoveryFindsNothing,
  gitdirOf,
  gitEnvRedirects,
  parseHeadText,
  parseLooseRef,
  type DiscoveryLevel,
} from '../../../src/core/git/gitHead';

const A = 'a'.repeat(40);
const B = 'b'.repeat(64);

describe('gitHead: HEAD from the files, plain layouts only (issue 19)', () => {
  it('parseHeadText: a full object id, a branch, or null for anything else', () => {
    const rows: Array<[string, ReturnType<typeof parseHeadText>]> = [
      [`${A}\n`, { oid: A }],
      [B, { oid: B }],
      ['ref: refs/heads/main\n', { branch: 'refs/heads/main' }],
      ['ref: refs/heads/ql-wt/S1\n', { branch: 'refs/heads/ql-wt/S1' }],
      ['ref: refs/heads/main\r\n', { branch: 'refs/heads/main' }],
      [`${A.slice(1)}\n`, null], // short
      [`${A.toUpperCase()}\n`, null], // git writes lower case
      ['ref: refs/tags/v1\n', null], // not a branch
      ['ref: refs/heads/.invalid\n', null], // reftable's placeholder
      ['ref: refs/heads/a/../b\n', null],
      ['ref: refs/heads/a//b\n', null],
      ['ref: refs/heads/x.lock\n', null],
      ['ref: refs/heads/a\\b\n', null],
      ['ref: refs/heads/main\nextra\n', null],
      ['', null],
    ];
    for (const [text, want] of rows) assert.deepEqual(parseHeadText(text), want, JSON.stringify(text));
  });

  it('parseLooseRef: a full object id, else null (symbolic refs, garbage)', () => {
    const rows: Array<[string, string | null]> = [
      [`${A}\n`, A],
      [B, B],
      ['ref: refs/heads/x\n', null],
      [`${A} x\n`, null],
      ['', null],
    ];
    for (const [text, want] of rows) assert.equal(parseLooseRef(text), want, JSON.stringify(text));
  });

  it('gitdirOf: the .git folder, or a gitdir: file joined to the folder as text (its `..` left to the kernel, as git resolves it)', () => {
    assert.equal(gitdirOf('/r', { kind: 'dir' }), path.join('/r', '.git'));
    assert.equal(
      gitdirOf('/r/.ql-wt/S1', { kind: 'file', text: 'gitdir: /r/.git/worktrees/S1\n' }),
      '/r/.git/worktrees/S1',
    );
    assert.equal(
      gitdirOf('/r/sub', { kind: 'file', text: 'gitdir: ../.git/modules/sub\n' }),
      '/r/sub/../.git/modules/sub',
    );
    assert.equal(
      gitdirOf('/r/sub', { kind: 'file', text: 'gitdir: ../.git/modules/sub\r\n' }),
      '/r/sub/../.git/modules/sub',
    );
    assert.equal(gitdirOf('/r', { kind: 'file', text: 'something else\n' }), null);
  });

  it('gitEnvRedirects: GIT_DIR, GIT_COMMON_DIR or GIT_WORK_TREE set → ask git', () => {
    assert.equal(gitEnvRedirects({}), false);
    assert.equal(gitEnvRedirects({ GIT_DIR: '/x' }), true);
    assert.equal(gitEnvRedirects({ GIT_COMMON_DIR: '/x' }), true);
    assert.equal(gitEnvRedirects({ GIT_WORK_TREE: '/x' }), true);
    assert.equal(gitEnvRedirects({ GIT_DIR: '' }), false);
  });

  it('discoveryFindsNothing: only when every folder up to / surely has neither a .git nor a HEAD', () => {
    const none: DiscoveryLevel = { dotGit: 'absent', head: 'absent' };
    const rows: Array<[DiscoveryLevel[], boolean]> = [
      [[none, none, none], true],
      [[none], true],
      [[], false], // nothing read: ask git
      [[none, { dotGit: 'present', head: 'absent' }, none], false], // a repository above
      [[{ dotGit: 'present', head: 'absent' }], false],
      [[none, { dotGit: 'absent', head: 'present' }], false], // maybe a bare repository
      [[{ dotGit: 'unknown', head: 'absent' }, none], false], // unreadable: ask git
      [[none, { dotGit: 'absent', head: 'unknown' }], false],
    ];
    for (const [levels, want] of rows) assert.equal(discoveryFindsNothing(levels), want, JSON.stringify(levels));
  });
});
