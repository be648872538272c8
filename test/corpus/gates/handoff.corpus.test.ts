import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { rewriteAutoEnriched, rewriteLastGateState, sectionContent, workingSet } from '../../../src/core/gates/handoff';
import { describeCorpus } from '../../support/corpus';

const PASS = { label: 'basic', exitCode: 0 };
const FAIL = { label: 'full', exitCode: 2, summary: 'label: full\nexit: 2\nduration: 4s\nlog: .ralph/gates/full-x.log\ncmd: npm test\n' };
const ENRICH = { lastCommit: 'abc1234 feat: add parser', lastDone: 'T001 First task', nextItem: 'T002 Second task' };

describeCorpus('handoff: the seed files (corpus ralph-wiggum-plugin/handoff-*.md)', (dir) => {
  const skeleton = fs.readFileSync(path.join(dir, 'ralph-wiggum-plugin', 'handoff-skeleton.md'), 'utf8');
  const afterFail = fs.readFileSync(path.join(dir, 'ralph-wiggum-plugin', 'handoff-after-gate-fail.md'), 'utf8');

  it('the skeleton has a Last gate state and no Working set', () => {
    assert.equal(sectionContent(skeleton, 'Last gate state'), '\n_(none yet)_\n');
    assert.equal(workingSet(skeleton), undefined);
  });

  it('a passing gate replaces the skeleton\'s placeholder and keeps the text before it byte-identical', () => {
    const out = rewriteLastGateState(skeleton, PASS);
    const at = skeleton.indexOf('\n## Last gate state') + 1;
    assert.equal(out.slice(0, at), skeleton.slice(0, at));
    assert.equal(out.slice(at), '## Last gate state\n\nlabel: basic\nexit: 0\n(passing — no details to surface)\n');
  });

  it('the gate-fail template gets the sections appended after its own text, which stays byte-identical', () => {
    const out = rewriteAutoEnriched(rewriteLastGateState(afterFail, FAIL), ENRICH);
    assert.ok(out.startsWith(afterFail));
    assert.equal(sectionContent(out, 'Last gate state'), `\n${FAIL.summary}`);
    assert.match(out, /## Auto-enriched state\n\n\*\*Last commit\*\*: `abc1234 feat: add parser`\n\*\*Last task done\*\*: T001 First task\n\*\*Next unchecked\*\*: T002 Second task\n$/);
  });
});
