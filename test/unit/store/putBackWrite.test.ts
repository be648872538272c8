import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spliceChangedLines } from '../../../src/core/store/byteSplice';
import { commitPlan, decideWrite, type FileFacts } from '../../../src/core/store/writePlan';
import { FileProblemError } from '../../../src/core/store/parseError';
import { readTextSync } from '../../../src/core/store/readJsonFile';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

/** Issue 11, breaker-s5 rows 12, 13, 16: a put-back is written where an ordinary edit is refused. */
describe('store: the put-back write rule (writePlan.ts decideWrite)', () => {
  const f = (o: Partial<FileFacts> = {}): FileFacts => ({ link: 'none', regular: true, mode: 0o644, utf8: true, ...o });
  const cases: [string, FileFacts, boolean, string][] = [
    ['an ordinary file is written, by an edit and by a put-back', f(), false, 'write'],
    [
      'a read-only file: an edit is refused',
      f({ mode: 0o444 }),
      false,
      'refused: the file is read-only (mode 0444): not written',
    ],
    [
      'a read-only file: a put-back replaces it, its mode kept',
      f({ mode: 0o444 }),
      true,
      'write: read-only (mode 0444): replaced by a new file (temporary file + rename in its folder), mode 0444 kept',
    ],
    [
      'not UTF-8: an edit is refused',
      f({ utf8: false }),
      false,
      'refused: the file is not UTF-8 text (editing it would replace its other bytes): not edited',
    ],
    [
      "not UTF-8: a put-back rewrites only the changed lines' bytes",
      f({ utf8: false }),
      true,
      'write bytes: not UTF-8 text: only the bytes of the changed lines were rewritten, every other byte kept',
    ],
    [
      'a link out of the workspace: an edit is refused',
      f({ link: 'outside', linkTo: '/tmp/x.md' }),
      false,
      'refused: a symbolic link to /tmp/x.md, outside the workspace: not written through',
    ],
    [
      'a link out of the workspace: a put-back replaces the link, never its target',
      f({ link: 'outside', linkTo: '/tmp/x.md', mode: 0o444 }),
      true,
      "write link: was a symbolic link to /tmp/x.md, outside the workspace: the link was replaced by a regular file (its target's content with the claims put back; /tmp/x.md left untouched)",
    ],
    [
      'a link inside the workspace is written through, by both',
      f({ link: 'inside', linkTo: '/w/real.md' }),
      true,
      'write through',
    ],
    [
      'a link to nothing is refused, also for a put-back',
      f({ link: 'dangling' }),
      true,
      'refused: a symbolic link whose target does not exist',
    ],
    ['a directory is refused, also for a put-back', f({ regular: false }), true, 'refused: not a regular file'],
  ];
  for (const [name, facts, putBack, want] of cases) {
    it(name, () => {
      const r = decideWrite(facts, putBack);
      const got = !r.write
        ? r.message
        : [
            'write',
            ...(r.bytes ? ['bytes'] : []),
            ...(r.replaceLink ? ['link'] : []),
            ...(r.through ? ['through'] : []),
          ].join(' ') + (r.notes.length ? `: ${r.notes.join('; ')}` : '');
      assert.equal(got, want);
    });
  }
});

describe('store: a text edit placed into bytes that are not UTF-8 (byteSplice.ts)', () => {
  const bytes = (s: string) => Buffer.from(s, 'latin1');
  const cases: [string, Buffer, (before: string) => string, Buffer | null][] = [
    [
      'a changed line elsewhere is replaced whole; the bad byte is kept',
      bytes('- [x] Two\n<!-- \xff -->\n'),
      (b) => b.replace('[x]', '[ ]'),
      bytes('- [ ] Two\n<!-- \xff -->\n'),
    ],
    [
      'a change on the line of the bad byte, after it, is placed by its suffix',
      bytes('\xff - [x] Caf\n'),
      (b) => b.replace('[x]', '[ ]'),
      bytes('\xff - [ ] Caf\n'),
    ],
    [
      'a change on the line of the bad byte, before it, is placed by its prefix',
      bytes('- [x] Caf\xe9\n'),
      (b) => b.replace('[x]', '[ ]'),
      bytes('- [ ] Caf\xe9\n'),
    ],
    [
      'a JSON status value, the bad byte in another string of the line',
      bytes('{"title": "\xff", "status": "passed"}\n'),
      (b) => b.replace('"passed"', '"pending"'),
      bytes('{"title": "\xff", "status": "pending"}\n'),
    ],
    ['no newline at the end stays so', bytes('a\n- [x] b'), (b) => b.replace('[x]', '[ ]'), bytes('a\n- [ ] b')],
    ['a line added cannot be placed', bytes('- [x] a\n\xff\n'), (b) => b + 'more\n', null],
    ['a change that covers the bad byte cannot be placed', bytes('x \xff y\n'), () => 'x z y\n', null],
    [
      'bad bytes on both sides of the change cannot be placed',
      bytes('\xff [x] \xfe\n'),
      (b) => b.replace('[x]', '[ ]'),
      null,
    ],
  ];
  for (const [name, raw, edit, want] of cases) {
    it(name, () => {
      const before = raw.toString('utf8');
      const got = spliceChangedLines(raw, before, edit(before));
      assert.deepEqual(got === null ? null : [...got], want === null ? null : [...want]);
    });
  }
});

describe('store: commitPlan with putBack writes what an edit refuses', () => {
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-putback-', { ralphDir: true });
  });
  afterEach(() => t.dispose());
  const untick = (file: string) => async () => {
    const before = readTextSync(file)!;
    return { writes: [{ file, before, after: before.replace('- [x] Two', '- [ ] Two') }], result: undefined };
  };

  it('a read-only file is replaced (temp file + rename), its mode kept, with a note naming it', async () => {
    const file = t.write('RALPH_TASK.md', '- [ ] One\n- [x] Two\n');
    fs.chmodSync(file, 0o444);
    await assert.rejects(commitPlan(file, untick(file)), FileProblemError);
    const notes: string[] = [];
    await commitPlan(file, untick(file), { putBack: { note: (n) => notes.push(n) } });
    assert.equal(t.read('RALPH_TASK.md'), '- [ ] One\n- [ ] Two\n');
    assert.equal(fs.statSync(file).mode & 0o777, 0o444);
    assert.deepEqual(notes, [
      `${file}: read-only (mode 0444): replaced by a new file (temporary file + rename in its folder), mode 0444 kept`,
    ]);
  });

  it('a file that is not UTF-8 keeps every byte but the mark', async () => {
    const file = t.file('RALPH_TASK.md');
    fs.writeFileSync(file, Buffer.from('- [ ] One\n- [x] Two\n<!-- \xff -->\n', 'latin1'));
    await commitPlan(file, untick(file), { putBack: { note: () => {} } });
    assert.deepEqual([...fs.readFileSync(file)], [...Buffer.from('- [ ] One\n- [ ] Two\n<!-- \xff -->\n', 'latin1')]);
  });

  it('a link out of the workspace is replaced by a regular file; the outside file is untouched', async () => {
    const outside = makeTempFolder('ralph-outside-');
    try {
      const target = outside.write('outside.md', '- [ ] One\n- [x] Two\n');
      const file = t.file('RALPH_TASK.md');
      fs.symlinkSync(target, file);
      await commitPlan(file, untick(file), { putBack: { note: () => {} } });
      assert.ok(!fs.lstatSync(file).isSymbolicLink());
      assert.equal(t.read('RALPH_TASK.md'), '- [ ] One\n- [ ] Two\n');
      assert.equal(fs.readFileSync(target, 'utf8'), '- [ ] One\n- [x] Two\n');
      assert.deepEqual(fs.readdirSync(path.dirname(target)), ['outside.md']);
    } finally {
      outside.dispose();
    }
  });
});
