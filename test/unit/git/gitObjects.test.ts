import { strict as assert } from 'node:assert';
import { createHash } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { treeOfLooseCommit } from '../../../src/core/git/gitObjects';

/** A loose object file's content for `type` and `body`, and its object id (sha1 or sha256). */
function loose(type: string, body: string, hash: 'sha1' | 'sha256' = 'sha1'): { oid: string; file: Buffer } {
  const raw = Buffer.concat([Buffer.from(`${type} ${Buffer.byteLength(body)}\0`), Buffer.from(body)]);
  return { oid: createHash(hash).update(raw).digest('hex'), file: deflateSync(raw) };
}

const T1 = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
const T2 = 'a'.repeat(64);
const commitBody = (tree: string) =>
  `tree ${tree}\nparent ${'1'.repeat(tree.length)}\nauthor A <a@b> 0 +0000\ncommitter A <a@b> 0 +0000\n\nmsg\n`;

describe("gitObjects: a commit's tree from its loose object file (git's answer, else null)", () => {
  it('treeOfLooseCommit: the tree of a commit whose content hashes to its name; null for anything else', () => {
    const c1 = loose('commit', commitBody(T1));
    const c256 = loose('commit', commitBody(T2), 'sha256');
    const blob = loose('blob', commitBody(T1));
    const shortTree = loose('commit', commitBody(T1), 'sha256');
    const noTree = loose('commit', `author A <a@b> 0 +0000\n\n${'tree '.repeat(3)}\n`);
    const badSize = (() => {
      const raw = Buffer.from(`commit 3\0${commitBody(T1)}`);
      return { oid: createHash('sha1').update(raw).digest('hex'), file: deflateSync(raw) };
    })();
    const rows: Array<[string, string, Uint8Array, string | null]> = [
      ['a SHA-1 commit', c1.oid, c1.file, T1],
      ['a SHA-256 commit', c256.oid, c256.file, T2],
      ['another name than its content', c1.oid.replace(/^./, (x) => (x === '0' ? '1' : '0')), c1.file, null],
      ['a blob', blob.oid, blob.file, null],
      ['a tree id of the other hash length', shortTree.oid, shortTree.file, null],
      ['no tree line first', noTree.oid, noTree.file, null],
      ['a header size that is not the content size', badSize.oid, badSize.file, null],
      ['not zlib', c1.oid, Buffer.from('not zlib'), null],
      ['no object id', 'HEAD', c1.file, null],
    ];
    for (const [what, oid, file, want] of rows) assert.equal(treeOfLooseCommit(oid, file), want, what);
  });
});
