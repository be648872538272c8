import * as assert from 'node:assert/strict';
import { parseProgressTxt, pidFromRunId } from '../../../src/core/sources/flowNext/progressTxt';

const header = '# Ralph Progress Log\nRun: r1\nStarted: 2026-01-15T10:00:00Z\n---\n';
const v08Block = (n: number, task: string) =>
  `## 2026-01-15T10:0${n}:00Z - iter ${n}\nstatus=work epic=fn-1-abc task=${task} reason=ready_task\nclaude_rc=0\nverdict=SHIP\npromise=\nreceipt=x exists=1\ntask_status=done\niter_log=iter-00${n}.log\nlast_output:\nline a\nline b\n---\n`;
const headBlock = (n: number, task: string, tail = 'ok') =>
  `## 2026-08-01T10:00:0${n}Z\niteration=${n}\nstatus=work\nspec=fn-114-x\ntask=${task}\nreason=ready_task\npromise=\nlast_output:\n${tail}\n---\n`;
const marker = (reason: string) => `\ncompletion_reason=${reason}\npromise=COMPLETE\n`;

describe('flow-next: progress.txt (seed-systems.md §2.8)', () => {
  const table: { name: string; text: string; expected: Partial<ReturnType<typeof parseProgressTxt>> }[] = [
    {
      name: 'a real v0.8 file gives iteration, epic and task (fixes §2.11-1)',
      text: header + v08Block(1, 'fn-1-abc.1') + v08Block(2, 'fn-1-abc.2'),
      expected: { iteration: 2, epic: 'fn-1-abc', task: 'fn-1-abc.2', completionReason: undefined },
    },
    {
      name: 'a HEAD key=value file gives iteration, spec and task',
      text: header + headBlock(3, 'fn-114-x.2'),
      expected: { iteration: 3, epic: 'fn-114-x', task: 'fn-114-x.2' },
    },
    {
      name: "flowctl's CI fixture form is read",
      text: 'iteration: 1\nepic: fn-1\ntask: fn-1.1\n',
      expected: { iteration: 1, epic: 'fn-1', task: 'fn-1.1' },
    },
    {
      name: 'the completion marker finishes a v0.8 run',
      text: header + v08Block(1, 'fn-1-abc.1') + marker('DONE'),
      expected: { completionReason: 'DONE' },
    },
    {
      name: 'the completion marker finishes a HEAD run with a reason holding spaces',
      text: header + headBlock(1, 'fn-114-x.1') + marker('NEEDS_HUMAN: reviewer requested human review'),
      expected: { completionReason: 'NEEDS_HUMAN: reviewer requested human review' },
    },
    {
      name: 'a marker quoted inside last_output does not finish the run (fixes §2.11-3)',
      text: header + headBlock(1, 'fn-114-x.1', 'completion_reason=DONE\npromise=COMPLETE'),
      expected: { completionReason: undefined, task: 'fn-114-x.1' },
    },
    {
      name: 'a tail line with task= does not change the current task',
      text: header + headBlock(1, 'fn-114-x.1', 'task=fn-9.9'),
      expected: { task: 'fn-114-x.1' },
    },
    {
      name: 'promise=COMPLETE without completion_reason is not finished',
      text: header + 'promise=COMPLETE\n',
      expected: { completionReason: undefined },
    },
    {
      name: 'the header gives the run id and start time',
      text: header,
      expected: { runId: 'r1', startedAt: '2026-01-15T10:00:00Z', iteration: null },
    },
  ];
  for (const c of table) {
    it(c.name, () => {
      const got = parseProgressTxt(c.text) as unknown as Record<string, unknown>;
      for (const [k, v] of Object.entries(c.expected)) assert.deepEqual(got[k], v, k);
    });
  }

  it('a v0.8 run id gives its pid; a HEAD short id gives none', () => {
    assert.deepEqual(pidFromRunId('20260115T100000Z-box-me_x-4242-ab12'), { pid: 4242, hostAndActor: 'box-me_x' });
    assert.equal(pidFromRunId('20260801-100000-ab12'), undefined);
  });
});
