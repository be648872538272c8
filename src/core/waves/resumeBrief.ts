import type { SubView } from './classify';

/**
 * The resume brief of an orphan (seed-systems.md §1.2 step 4, §1.8): `.planning/<phase>/resume-<subId>.md`. It follows
 * the orchestrator's resume block of IJFW's `checkpoint-contract.md` (prior checkpoint, tool uses, last action, files
 * created / modified, commits, next step, blockers, then "resume from next_step, do not restart") and ends with one
 * checkbox, `- [ ] <next_step>`, so `ralph run --source <brief>` can run it as a task file whose gate verifies it.
 */

/** A code fence longer than any run of backticks in `text` (at least three). */
export function fenceFor(text: string): string {
  let longest = 0;
  for (const m of text.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  return '`'.repeat(Math.max(3, longest + 1));
}

/** Text as a markdown block quote, every line kept exactly (a quoted `- [ ]` line is not a checkbox). */
export function blockQuote(text: string): string {
  return text
    .split('\n')
    .map((l) => (l ? `> ${l}` : '>'))
    .join('\n');
}

/** The text of the brief's one checkbox: the next step on one line (whitespace collapsed), else the last action. */
export function briefTask(sub: Pick<SubView, 'nextStep' | 'lastAction'>): string {
  const one = (s: string) => s.replace(/\s+/g, ' ').trim();
  if (sub.nextStep && one(sub.nextStep)) return one(sub.nextStep);
  return `Continue the subagent's work after its last action: ${one(sub.lastAction ?? '')}`.trim();
}

const list = (xs: readonly string[]) => (xs.length ? xs.map((x) => JSON.stringify(x)).join(', ') : '(none)');

/**
 * The brief's markdown (pure). `checkpointRel` is the checkpoint's path as the workspace names it; `writtenAt` an ISO
 * time. The checkpoint JSON is quoted verbatim in a fence; the next step exactly, as a block quote.
 */
export function renderResumeBrief(o: {
  waveId: string;
  phase: string;
  sub: SubView;
  checkpointRel: string;
  writtenAt: string;
}): string {
  const s = o.sub;
  const cp = s.checkpoint;
  const text = s.checkpointText ?? '';
  const fence = fenceFor(text);
  const lines = [
    `# Resume brief: ${s.subId} (wave ${o.waveId})`,
    '',
    `Written by \`ralph waves check --phase ${o.phase}\` at ${o.writtenAt}. Subagent ${s.subId} stopped checkpointing ` +
      `${Math.round((s.checkpointAgeMs ?? 0) / 1000)} s ago without posting DONE: it was cut off mid-task. Nothing was dispatched.`,
    '',
    '## Original task',
    '',
    s.summary ? blockQuote(s.summary) : "(no blackboard claim names this subagent; see the wave's dispatch brief)",
    '',
    '## Last checkpoint',
    '',
    `\`${o.checkpointRel}\`${cp?.timeField ? ` (${cp.timeField} ${new Date(cp.timeMs!).toISOString()})` : ''}${s.worktree ? `, read from the worktree ${s.worktree}` : ''}:`,
    '',
    `${fence}json`,
    text.replace(/\n$/, ''),
    fence,
    '',
    '## Prior checkpoint',
    '',
    `- tool uses: ${cp?.toolUseCount ?? '(not recorded)'}`,
    `- last action: ${cp?.lastAction !== undefined ? JSON.stringify(cp.lastAction) : '(not recorded)'}`,
    `- files created: ${list(cp?.filesCreated ?? [])}`,
    `- files modified: ${list(cp?.filesModified ?? [])}`,
    `- commits made: ${list(cp?.commits ?? [])}`,
    `- blockers: ${cp?.blockers !== undefined ? JSON.stringify(cp.blockers) : '(none)'}`,
    '',
    "## Next step (the subagent's own words)",
    '',
    s.nextStep !== undefined
      ? blockQuote(s.nextStep)
      : '(the checkpoint records no next_step; continue from the last action above)',
    '',
    '## Instructions',
    '',
    'Resume from the next step above; do not restart the task. Do not redo anything listed in `files_created`, ' +
      '`files_modified` or `commits_made`: re-verify the prior commits (`git show --stat <sha>`) and the files, then ' +
      'continue from `next_step`. When it is done and committed, tick the box below.',
    '',
    `- [ ] ${briefTask(s)}`,
    '',
  ];
  return lines.join('\n');
}

/** The brief with its last box unticked: two briefs equal under this are the same brief (a tick is kept). */
export function untickedBrief(text: string): string {
  return text.replace(/^- \[[xX]\] /m, '- [ ] ');
}
