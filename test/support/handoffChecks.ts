import * as assert from 'node:assert/strict';
import { rewriteAutoEnriched, rewriteLastGateState, sectionContent, workingSet } from '../../src/core/gates/handoff';

/** Gate states and enrichment the handoff tests write. */
export const PASS = { label: 'basic', exitCode: 0 };
export const FAIL = {
  label: 'full',
  exitCode: 2,
  summary: 'label: full\nexit: 2\nduration: 4s\nlog: .ralph/gates/full-x.log\ncmd: npm test\n',
};
export const ENRICH = {
  lastCommit: 'abc1234 feat: add parser',
  lastDone: 'T001 First task',
  nextItem: 'T002 Second task',
};

/**
 * Declares the checks of whole handoff files: `skeleton` (a handoff.md as first written: a `## Last gate state` with
 * the `_(none yet)_` placeholder, no Working set) and `afterFail` (a loop's text after gate failures, no Ralph
 * sections). Used on the fixtures (unit) and on ralph-wiggum's own files (corpus).
 */
export function describeHandoffFiles(skeleton: () => string, afterFail: () => string): void {
  it('the skeleton has a Last gate state and no Working set', () => {
    assert.equal(sectionContent(skeleton(), 'Last gate state'), '\n_(none yet)_\n');
    assert.equal(workingSet(skeleton()), undefined);
  });

  it("a passing gate replaces the skeleton's placeholder and keeps the text before it byte-identical", () => {
    const text = skeleton();
    const out = rewriteLastGateState(text, PASS);
    const at = text.indexOf('\n## Last gate state') + 1;
    assert.equal(out.slice(0, at), text.slice(0, at));
    assert.equal(out.slice(at), '## Last gate state\n\nlabel: basic\nexit: 0\n(passing — no details to surface)\n');
  });

  it('the gate-fail template gets the sections appended after its own text, which stays byte-identical', () => {
    const text = afterFail();
    const out = rewriteAutoEnriched(rewriteLastGateState(text, FAIL), ENRICH);
    assert.ok(out.startsWith(text));
    assert.equal(sectionContent(out, 'Last gate state'), `\n${FAIL.summary}`);
    assert.match(
      out,
      /## Auto-enriched state\n\n\*\*Last commit\*\*: `abc1234 feat: add parser`\n\*\*Last task done\*\*: T001 First task\n\*\*Next unchecked\*\*: T002 Second task\n$/,
    );
  });
}
