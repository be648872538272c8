import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  HANDOFF_SKELETON,
  handoffPath,
  readHandoff,
  rewriteAutoEnriched,
  rewriteLastGateState,
  sectionContent,
  workingSet,
  workingSetChanged,
  writeAutoEnriched,
  writeLastGateState,
} from '../../../src/core/gates/handoff';
import { fixture } from '../../support/fixtures';
import { describeHandoffFiles, ENRICH, FAIL, PASS } from '../../support/handoffChecks';
import { makeTempFolder, type TempFolder } from '../../support/tempFolder';

const WORKING =
  '\n- current task: T002 (parser)\n- files: src/a.ts, `src/b.ts`\n\n### facts\n- the lexer is hand-written\n\n```md\n## not a heading inside a fence\n```\n\n';

describe('handoff: whole files (test/fixtures/seed-formats/handoff-*.md)', () => {
  describeHandoffFiles(
    () => fs.readFileSync(fixture('seed-formats', 'handoff-skeleton.md'), 'utf8'),
    () => fs.readFileSync(fixture('seed-formats', 'handoff-after-gate-fail.md'), 'utf8'),
  );
});

describe("handoff: rewrites keep the agent's Working set byte-identical", () => {
  const layouts: { name: string; text: string }[] = [
    {
      name: 'Working set between the two Ralph sections',
      text: `# Loop Handoff\n\n## Last gate state\n\nold\n\n## Working set\n${WORKING}## Auto-enriched state\n\nold enrich\n`,
    },
    { name: 'Working set first, Ralph sections missing', text: `## Working set\n${WORKING}` },
    {
      name: 'Working set last, without a final newline',
      text: `## Auto-enriched state\n\nx\n\n## Last gate state\n\ny\n## Working set\n- only line`,
    },
    { name: 'a CRLF file', text: `# H\r\n\r\n## Working set\r\n- a\r\n- b\r\n\r\n## Last gate state\r\n\r\nold\r\n` },
    {
      name: 'a heading with other capitalisation and trailing blanks',
      text: `## WORKING SET  \n- a\n## last gate state\nold\n`,
    },
  ];
  for (const l of layouts) {
    for (const [what, rewrite] of [
      ['a passing gate', (t: string) => rewriteLastGateState(t, PASS)],
      ['a failing gate', (t: string) => rewriteLastGateState(t, FAIL)],
      ['the auto-enriched state', (t: string) => rewriteAutoEnriched(t, ENRICH)],
    ] as const) {
      it(`${l.name}: rewriting ${what} leaves the Working set as it was`, () => {
        const before = workingSet(l.text);
        assert.notEqual(before, undefined);
        const out = rewrite(l.text);
        assert.equal(workingSet(out), before);
        assert.equal(workingSetChanged(l.text, out), false);
      });
    }
  }

  it('only the rewritten section changes: everything before and after it is kept', () => {
    const text = layouts[0]!.text;
    const out = rewriteLastGateState(text, FAIL);
    const start = text.indexOf('## Last gate state');
    const end = text.indexOf('## Working set');
    assert.equal(out.slice(0, start), text.slice(0, start));
    assert.ok(out.endsWith(text.slice(end)));
  });

  it('rewriting twice gives the same text as rewriting once', () => {
    const once = rewriteAutoEnriched(rewriteLastGateState(layouts[1]!.text, FAIL), ENRICH);
    assert.equal(rewriteAutoEnriched(rewriteLastGateState(once, FAIL), ENRICH), once);
  });

  it("inserted lines follow the file's CRLF line endings", () => {
    const out = rewriteLastGateState(layouts[3]!.text, PASS);
    assert.ok(
      out.endsWith('## Last gate state\r\n\r\nlabel: basic\r\nexit: 0\r\n(passing — no details to surface)\r\n'),
      JSON.stringify(out),
    );
  });
});

describe('handoff: telling a graceful yield (fixes seed-systems.md §3.15-2)', () => {
  const base = `## Last gate state\n\nx\n\n## Working set\n- task A\n`;
  const table: { name: string; before: string | undefined; after: string | undefined; changed: boolean }[] = [
    {
      name: 'Ralph rewriting its own sections is not a yield',
      before: base,
      after: rewriteAutoEnriched(rewriteLastGateState(base, FAIL), ENRICH),
      changed: false,
    },
    {
      name: 'a new Working set content is a yield',
      before: base,
      after: base.replace('task A', 'task B'),
      changed: true,
    },
    {
      name: 'a Working set added to a file without one is a yield',
      before: HANDOFF_SKELETON,
      after: `${HANDOFF_SKELETON}\n## Working set\n- task A\n`,
      changed: true,
    },
    { name: 'a handoff created with a Working set is a yield', before: undefined, after: base, changed: true },
    {
      name: 'an empty Working set added is not a yield',
      before: HANDOFF_SKELETON,
      after: `${HANDOFF_SKELETON}\n## Working set\n\n`,
      changed: false,
    },
    {
      name: 'the same Working set with other line endings and trailing blanks is not a yield',
      before: base,
      after: base.replace('- task A\n', '- task A   \r\n'),
      changed: false,
    },
    { name: 'a Working set removed is not a yield', before: base, after: '## Last gate state\n\nx\n', changed: false },
  ];
  for (const c of table) it(c.name, () => assert.equal(workingSetChanged(c.before, c.after), c.changed));

  it('the Working set content stops at the next heading but keeps its ### subheadings and fenced ## lines', () => {
    assert.equal(workingSet(`## Working set\n${WORKING}## Next\n`), WORKING);
  });
});

describe('handoff: the file', () => {
  let ws: TempFolder;
  beforeEach(() => {
    ws = makeTempFolder('ralph-handoff-', { ralphDir: true });
  });
  afterEach(() => ws.dispose());

  it('is seeded from the skeleton when missing, then gets the gate state', async () => {
    const text = await writeLastGateState(ws.dir, PASS);
    assert.equal(await readHandoff(ws.dir), text);
    assert.ok(text.startsWith('# Loop Handoff\n'));
    assert.equal(
      sectionContent(text, 'Last gate state'),
      '\nlabel: basic\nexit: 0\n(passing — no details to surface)\n',
    );
  });

  it("keeps the agent's Working set on disk byte-identical through both rewrites", async () => {
    const original = `# Loop Handoff\n\n## Working set\n${WORKING}`;
    fs.writeFileSync(handoffPath(ws.dir), original);
    await writeLastGateState(ws.dir, FAIL);
    const text = await writeAutoEnriched(ws.dir, { lastCommit: null, lastDone: undefined, nextItem: 'T9' });
    assert.equal(workingSet(fs.readFileSync(handoffPath(ws.dir), 'utf8')), WORKING);
    assert.ok(text.startsWith(original));
    assert.match(
      text,
      /\*\*Last commit\*\*: \(none\)\n\*\*Last task done\*\*: \(none\)\n\*\*Next unchecked\*\*: T9\n$/,
    );
  });

  it('leaves no temporary file behind', async () => {
    await writeLastGateState(ws.dir, PASS);
    assert.deepEqual(fs.readdirSync(path.join(ws.dir, '.ralph')), ['handoff.md']);
  });
});
