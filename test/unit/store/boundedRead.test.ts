import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';
import {
  DEFAULT_READ_LIMITS,
  readListedTextSync,
  readTextOrProblem,
  readTextSync,
  setReadLimits,
} from '../../../src/core/store/readJsonFile';
import { execFileSync } from 'node:child_process';
import { FileProblemError, parseJsonText, tooDeepAt } from '../../../src/core/store/parseError';
import { readTextIfExists } from '../../../src/core/store/atomicWrite';
import { loadConfig } from '../../../src/core/store/loadConfig';
import { readQuantum } from '../../../src/core/sources/quantum/readQuantum';
import { parseCheckboxes, readChecklists } from '../../../src/core/sources/checklist/checklist';
import { setCheckboxes } from '../../../src/core/sources/checklist/checklistWrite';
import { parseProgressTxt } from '../../../src/core/sources/flowNext/progressTxt';
import { loadSources } from '../../../src/core/sources/plan';
import { nulByteProblem } from '../../../src/core/agents/spawn';
import type { FileProblem } from '../../../src/core/store/parseError';

/** Issue 12, bounded input: every reader reads only regular files, within a limit per format, and says why not. */
describe('store: bounded input (issue 12)', () => {
  let t: TempFolder;
  beforeEach(() => {
    t = makeTempFolder('ralph-bounded-');
  });
  afterEach(() => {
    setReadLimits();
    t.dispose();
  });

  const story = (id: string) => ({ id, title: `Story ${id}`, passes: false });
  const quantum = (stories: unknown[]) => JSON.stringify({ project: 'p', branchName: 'b', stories }, null, 2) + '\n';

  const refusal = (f: () => unknown): FileProblemError => {
    try {
      f();
    } catch (err) {
      assert.ok(err instanceof FileProblemError, `expected a FileProblemError, got ${String(err)}`);
      return err;
    }
    assert.fail('expected a refusal');
  };

  it('refuses a task source linked to /dev/zero without reading it', () => {
    fs.symlinkSync('/dev/zero', t.file('quantum.json'));
    const e = refusal(() => readTextSync(t.file('quantum.json')));
    assert.match(e.message, /quantum\.json: refused: a character device, not a regular file/);
    assert.deepEqual(readQuantum(t.dir)?.problem?.message, 'refused: a character device, not a regular file');
  });

  it('refuses a 600 MB quantum.json by its size (sparse: no disk used), naming the limit', () => {
    fs.writeFileSync(t.file('quantum.json'), '');
    fs.truncateSync(t.file('quantum.json'), 600 * 1024 * 1024);
    const p = readQuantum(t.dir)?.problem;
    assert.equal(p?.file, 'quantum.json');
    assert.match(p?.message ?? '', /^refused: 600\.0 MiB is more than the 64\.0 MiB limit/);
  });

  it('the limit is per format and configurable (readLimits in .ralph/config.json)', async () => {
    t.write('quantum.json', quantum([story('US-1')]));
    t.write('RALPH_TASK.md', '- [ ] one\n'.repeat(300));
    assert.ok(readQuantum(t.dir)?.doc);
    t.write('.ralph/config.json', JSON.stringify({ readLimits: { jsonMb: 0.0001 } }));
    await loadConfig(t.dir);
    assert.match(readQuantum(t.dir)?.problem?.message ?? '', /^refused: .* more than the 105 B limit/);
    assert.equal(readTextSync(t.file('RALPH_TASK.md'))?.length, 3000, 'markdown keeps its own (default) limit');
    setReadLimits();
    assert.deepEqual(DEFAULT_READ_LIMITS, { jsonBytes: 64 * 1024 * 1024, textBytes: 16 * 1024 * 1024 });
    assert.ok(readQuantum(t.dir)?.doc);
  });

  it('a task file that is a directory is a problem, not EISDIR', async () => {
    fs.mkdirSync(t.file('quantum.json'));
    fs.mkdirSync(t.file('RALPH_TASK.md'));
    assert.equal(readQuantum(t.dir)?.problem?.message, 'refused: a directory, not a regular file');
    const problems: FileProblem[] = [];
    assert.deepEqual(readChecklists(t.dir, problems), []);
    assert.deepEqual(
      problems.map((p) => `${p.file}: ${p.message}`),
      ['RALPH_TASK.md: refused: a directory, not a regular file'],
    );
    assert.throws(
      () => readChecklists(t.dir),
      FileProblemError,
      'without a problems list (the engine) a refusal is thrown, never read as an empty list',
    );
    await assert.rejects(readTextIfExists(t.file('quantum.json')), FileProblemError);
  });

  it('200,000-deep nesting is refused at the first level too deep, without a stack overflow', () => {
    const text = '['.repeat(200_000) + ']'.repeat(200_000);
    const r = parseJsonText('quantum.json', text);
    assert.equal(r.ok, false);
    assert.deepEqual(!r.ok && r.problem, {
      file: 'quantum.json',
      line: 1,
      column: 513,
      message: 'refused: arrays and objects nested more than 512 deep',
    });
    t.write(
      'quantum.json',
      `{"project":"p","branchName":"b","stories":[],"x":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`,
    );
    assert.match(readQuantum(t.dir)?.problem?.message ?? '', /nested more than 512 deep/);
    assert.equal(parseJsonText('f', `{"s":"${'['.repeat(2000)}"}`).ok, true, 'brackets inside strings do not count');
  });

  it('duplicate story ids are a problem at the second one', () => {
    t.write('quantum.json', quantum([story('US-1'), story('US-2'), story('US-1')]));
    const p = readQuantum(t.dir)?.problem;
    assert.equal(p?.line, 16);
    assert.match(p?.message ?? '', /^stories\.2\.id: duplicate story id "US-1"/);
  });

  it('a NUL byte in a task text is refused with its position; a prompt with one is refused without printing it', () => {
    t.write('RALPH_TASK.md', '# T\n- [ ] one\0two\n');
    const e = refusal(() => readTextSync(t.file('RALPH_TASK.md')));
    assert.equal(e.message, `${t.file('RALPH_TASK.md')}:2:10: refused: the file contains a NUL byte (is it binary?)`);
    const prompt = 'secret prompt text '.repeat(1000) + '\0';
    const m = nulByteProblem(['-p', '--', prompt]) ?? '';
    assert.match(m, /argument 2 \(19001 characters, the prompt\) contains a NUL byte at offset 19000/);
    assert.ok(!m.includes('secret'), 'the prompt is not in the message');
    assert.equal(nulByteProblem(['-p', 'fine']), undefined);
  });

  it('CR-only line endings are line endings: boxes are read, and ticking one keeps the CRs', async () => {
    const text = '# T\r- [ ] one\r- [x] two\r- [ ] three\r';
    assert.deepEqual(
      parseCheckboxes(text).items.map((b) => [b.line, b.done, b.text]),
      [
        [2, false, 'one'],
        [3, true, 'two'],
        [4, false, 'three'],
      ],
    );
    t.write('RALPH_TASK.md', text);
    assert.equal(loadSources(t.dir).checklists[0]?.items.length, 3);
    await setCheckboxes(t.file('RALPH_TASK.md'), [4], true);
    assert.equal(fs.readFileSync(t.file('RALPH_TASK.md'), 'utf8'), '# T\r- [ ] one\r- [x] two\r- [x] three\r');
    assert.deepEqual(parseProgressTxt('iteration: 3\rtask: fn-1.2\r').task, 'fn-1.2', 'progress.txt too');
  });

  it('readListedTextSync (the cheap reader of listed files) answers as readTextSync: text, refusal or absence', () => {
    const answer = (f: () => unknown): string => {
      try {
        return JSON.stringify({ text: f() ?? null });
      } catch (err) {
        return err instanceof FileProblemError ? `refused ${err.message}` : `threw ${String(err)}`;
      }
    };
    t.write('small.json', '{"a": 1}\n');
    t.write('empty.json', '');
    t.write('big.json', `"${'x'.repeat(200 * 1024)}"`);
    t.write('exact.json', 'y'.repeat(64 * 1024));
    t.write('nul.json', '{"a":\n "x\0y"}');
    t.write('utf8.json', '"ünïcödé ✓"');
    fs.symlinkSync('/dev/zero', t.file('zero.json'));
    fs.symlinkSync(t.file('small.json'), t.file('link.json'));
    fs.mkdirSync(t.file('dir.json'));
    let fifo = false;
    try {
      execFileSync('mkfifo', [t.file('pipe.json')]);
      fifo = true;
    } catch {
      /* no mkfifo: skip that case */
    }
    const names = [
      'small.json',
      'empty.json',
      'big.json',
      'exact.json',
      'nul.json',
      'utf8.json',
      'zero.json',
      'link.json',
      'dir.json',
      'absent.json',
      ...(fifo ? ['pipe.json'] : []),
    ];
    for (const limits of [{}, { jsonBytes: 5 }, { jsonBytes: 64 * 1024 }]) {
      setReadLimits(limits);
      for (const n of names)
        assert.equal(
          answer(() => readListedTextSync(t.file(n))),
          answer(() => readTextSync(t.file(n))),
          `${n} with ${JSON.stringify(limits)}`,
        );
    }
  });

  it('tooDeepAt (strings skipped with indexOf) finds what the step-per-character scan finds, on random texts', () => {
    const reference = (text: string, max: number): number => {
      let depth = 0;
      let inString = false;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (inString) {
          if (c === 92) i++;
          else if (c === 34) inString = false;
        } else if (c === 34) inString = true;
        else if (c === 91 || c === 123) {
          if (++depth > max) return i;
        } else if (c === 93 || c === 125) depth--;
      }
      return -1;
    };
    let seed = 11;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const alphabet = '[]{}"\\ a';
    for (let k = 0; k < 50_000; k++) {
      let text = '';
      for (let i = rnd(24); i > 0; i--) text += alphabet[rnd(alphabet.length)];
      const max = 1 + rnd(4);
      assert.equal(tooDeepAt(text, max), reference(text, max), JSON.stringify(text));
    }
    assert.equal(tooDeepAt(`${'['.repeat(600)}${']'.repeat(600)}`, 512), 512);
  });

  it('readTextOrProblem names the file as asked', () => {
    fs.symlinkSync('/dev/zero', t.file('x.md'));
    assert.deepEqual(readTextOrProblem(t.file('x.md'), 'x.md').problem, {
      file: 'x.md',
      line: 0,
      column: 0,
      message: 'refused: a character device, not a regular file',
    });
    assert.deepEqual(readTextOrProblem(path.join(t.dir, 'absent.md')), { text: undefined });
  });
});
