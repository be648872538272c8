import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { leastDone, type ClaimBaseline } from '../../../src/core/model/claimBaseline';
import {
  baselineCopyPath,
  baselineMirrorPath,
  listBaselineMirrors,
  readBaselineMirror,
  writeBaselineMirror,
} from '../../../src/core/loop/baselineMirror';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

const b = (o: Partial<ClaimBaseline> = {}): ClaimBaseline => ({
  at: 't',
  source: 'checklist',
  label: 'RALPH_TASK.md',
  done: [],
  ...o,
});

describe('two copies of a claim baseline count the fewest done (issue 11, breaker-s5 rows 09/10; claimBaseline.ts leastDone)', () => {
  const cases: [string, ClaimBaseline, ClaimBaseline, Partial<ClaimBaseline>][] = [
    ['equal copies: the same', b({ done: ['a #1'] }), b({ done: ['a #1'] }), { done: ['a #1'] }],
    [
      'a forged copy with an extra done key: the key is not done',
      b({ done: ['a #1', 'Second box #1'] }),
      b({ done: ['a #1'] }),
      { done: ['a #1'] },
    ],
    [
      'epics and other sources are intersected',
      b({ epics: ['e1', 'e2'], sources: { quantum: ['US-1', 'US-2'] } }),
      b({ epics: ['e1'], sources: { quantum: ['US-1'], flow: ['t'] } }),
      { epics: ['e1'], sources: { quantum: ['US-1'], flow: ['t'] } },
    ],
    [
      'a checklist file one copy lacks has no box done',
      b({ checklists: { 'PROMPT.md': ['x #1'] } }),
      b({}),
      { checklists: { 'PROMPT.md': [] } },
    ],
    [
      'items and agent marks are joined',
      b({ items: ['a'], agentMarks: ['quantum:US-1'] }),
      b({ items: ['b'], agentMarks: ['quantum:US-2'] }),
      { items: ['a', 'b'], agentMarks: ['quantum:US-1', 'quantum:US-2'] },
    ],
  ];
  for (const [name, x, y, want] of cases) {
    it(name, () => {
      const got = leastDone(x, y) as unknown as Record<string, unknown>;
      for (const [k, v] of Object.entries(want)) assert.deepEqual(got[k], v, k);
    });
  }

  let t: TempFolder;
  let env: NodeJS.ProcessEnv;
  beforeEach(() => {
    t = makeTempFolder('ralph-copies-', { ralphDir: true });
    env = { XDG_STATE_HOME: t.file('state') };
  });
  afterEach(() => t.dispose());

  it('a mirror deleted is read from its copy, and still listed', async () => {
    await writeBaselineMirror(t.dir, 'r1', b({ done: ['a #1'] }), env);
    fs.rmSync(baselineMirrorPath(t.dir, 'r1', env));
    assert.deepEqual(readBaselineMirror(t.dir, 'r1', env)?.done, ['a #1']);
    assert.deepEqual(
      listBaselineMirrors(t.dir, env).map((m) => [m.runId, m.baseline?.done]),
      [['r1', ['a #1']]],
    );
  });

  it('a forged mirror does not add done: its copy still says what was verified', async () => {
    await writeBaselineMirror(t.dir, 'r1', b({ done: ['a #1'] }), env);
    fs.writeFileSync(baselineMirrorPath(t.dir, 'r1', env), JSON.stringify(b({ done: ['a #1', 'Second box #1'] })));
    assert.deepEqual(readBaselineMirror(t.dir, 'r1', env)?.done, ['a #1']);
  });

  it('removing the mirror removes both copies', async () => {
    await writeBaselineMirror(t.dir, 'r1', b(), env);
    await writeBaselineMirror(t.dir, 'r1', null, env);
    assert.ok(
      !fs.existsSync(baselineMirrorPath(t.dir, 'r1', env)) && !fs.existsSync(baselineCopyPath(t.dir, 'r1', env)),
    );
    assert.deepEqual(listBaselineMirrors(t.dir, env), []);
  });
});
