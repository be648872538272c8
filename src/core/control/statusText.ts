import { clipText, MAX_LINE_CHARS } from '../../protocol/visibleText';
import { contextFigure, contextLine, contextText } from './contextFigure';
import type { RunView } from './runView';
import type { StatusSnapshot } from './statusSnapshot';
import type { WaveJson } from '../model/waves';
import { formatAge, formatWaveLine } from '../waves/format';

/**
 * The lines `ralph status` prints under an active run, from its view: state, per lane the iteration, item,
 * attempt, context gauge and cost, the run's cost, the last gate results, and each open question with how to
 * answer it. Pure.
 */
export function formatRunViewLines(v: RunView, indent = '    '): string[] {
  const out: string[] = [];
  const cost = `$${v.cost.runUsd.toFixed(4)}${v.maxCostUsd ? ` of $${v.maxCostUsd}` : ''}`;
  out.push(
    `${indent}state: ${v.stateText} · iteration ${v.iteration}${v.maxIterations ? ` of ${v.maxIterations}` : ''} · cost ${cost}${v.progress ? ` · ${v.progress.done}/${v.progress.total} done` : ''}`,
  );
  const parallel = v.lanes.some((l) => l.lane > 0);
  for (const l of v.lanes) {
    // A sequential run has one lane (0): no lane number to show.
    const parts = [parallel ? `lane ${l.lane}: ${l.activity}` : `now: ${l.activity}`];
    if (l.item) parts.push(`${l.item.id}${l.item.title && l.item.title !== l.item.id ? ` ${l.item.title}` : ''}`);
    else if (l.purpose && l.purpose !== 'work') parts.push(l.purpose);
    // A lane of a parallel run (numbered from 1) says which of the run's iterations it runs.
    if (l.lane > 0 && l.iteration !== null) parts.push(`iteration ${l.iteration}`);
    if (l.attempt) parts.push(`attempt ${l.attempt.text}`);
    if (parallel && l.context)
      parts.push(
        `context ${contextText(contextFigure({ ...l.context, window: Math.max(l.context.window, v.context.window) }))}`,
      );
    parts.push(`iteration cost $${l.iterationCostUsd.toFixed(4)}`);
    // A remote lane says the worker (host:pid) it runs on.
    if (l.worker) parts.push(`on ${l.worker}`);
    out.push(`${indent}${parts.join(' · ')}`);
  }
  if (v.workers && !v.final)
    out.push(
      `${indent}workers: ${v.workers.length} alive${v.workers.length ? ` (${v.workers.map((w) => w.id).join(', ')})` : ''}`,
    );
  // The run's one context figure (contextFigure.ts), as the gauge, the dashboard and `ralph watch` show it.
  if (!parallel && v.context?.figure) out.push(`${indent}context: ${contextLine(v.context.figure)}`);
  for (const g of v.gates)
    out.push(
      `${indent}gate ${g.tier}: ${g.running ? 'running' : g.passed ? 'passed' : `failed (exit ${g.exitCode})`}${g.command ? ` — ${g.command}` : ''}`,
    );
  for (const q of v.questions) {
    out.push(`${indent}question${q.item ? ` (${q.item.id})` : ''}: ${q.text.split('\n')[0]}`);
    out.push(
      `${indent}  answer: ralph answer --run ${v.runId}${q.item ? ` --item ${q.item.id}` : ''} "<text>", or write ${q.answerFile}`,
    );
  }
  return out;
}

/**
 * Text form, starting with flowctl's lines (§2.6): `Epics: N open, N done` (`Specs:` for v1+ folders),
 * `Tasks: N todo, N in_progress, N done, N blocked`, then ours, then `Active runs:` with
 * `  <id> (iteration N, working on <task>) [PAUSED, STOPPED]` or `No active runs`.
 */
export function formatStatusText(s: StatusSnapshot): string {
  const dialect = s.flow_dialect ?? 'epics';
  const out: string[] = [];
  if (s.flow_exists) {
    out.push(`${dialect === 'specs' ? 'Specs' : 'Epics'}: ${s.epics.open} open, ${s.epics.done} done`);
    out.push(
      `Tasks: ${s.tasks.todo} todo, ${s.tasks.in_progress} in_progress, ${s.tasks.done} done, ${s.tasks.blocked} blocked`,
    );
  }
  if (s.quantum_exists) {
    const q = s.stories;
    out.push(
      `Stories: ${q.pending} pending, ${q.in_progress} in_progress, ${q.passed} passed, ${q.failed} failed, ${q.blocked} blocked`,
    );
  }
  for (const c of s.checklists) out.push(`Checklist ${c.path}: ${c.done}/${c.total} done`);
  if (!s.flow_exists && !s.quantum_exists && !s.checklists.length)
    out.push('No task sources (.flow/, quantum.json, RALPH_TASK.md, PROMPT.md, specs/*/tasks.md)');
  else
    out.push(
      `Progress: ${s.progress}${s.unverified_claims.length ? ` (+${s.unverified_claims.length} claimed done, not verified: ${s.unverified_claims.map((u) => u.id).join(', ')})` : ''}${s.unreadable_items ? ` (+${s.unreadable_items} unreadable item file${s.unreadable_items > 1 ? 's' : ''}: not complete, see Problem below)` : ''}`,
    );
  for (const i of s.in_progress)
    out.push(
      i.stale_after_minutes !== undefined
        ? `Stale: ${i.id} ${i.title} (in progress${i.since ? ` since ${i.since}` : ''}, past the ${i.stale_after_minutes}-minute stale threshold with no run active; ralph stale --apply fails or blocks it)`
        : `In progress: ${i.id} ${i.title}${i.since ? ` (since ${i.since})` : ''}`,
    );
  if (s.last_completed)
    out.push(`Last completed: ${s.last_completed.id} ${s.last_completed.title} (${s.last_completed.at})`);
  for (const b of s.blocked) out.push(`Blocked: ${b.id} ${b.title}${b.reason ? ` — ${firstLine(b.reason)}` : ''}`);
  out.push(...formatWavesText(s.waves));
  out.push('');
  const active = s.runs;
  if (active.length) {
    out.push('Active runs:');
    for (const r of active) {
      const flags = [r.paused ? 'PAUSED' : '', r.stopped ? 'STOPPED' : ''].filter(Boolean);
      const working = r.current_task
        ? `, working on ${r.current_task}`
        : r.lanes
          ? `, ${r.lanes.length} lane${r.lanes.length === 1 ? '' : 's'} at work`
          : '';
      out.push(`  ${r.id} (iteration ${r.iteration ?? '?'}${working})${flags.length ? ` [${flags.join(', ')}]` : ''}`);
      out.push(...formatRunViewLines(r.view));
    }
  } else {
    out.push('No active runs');
  }
  const finished = s.recent_runs;
  if (finished.length) {
    out.push('Finished runs:');
    for (const r of finished) {
      const ctx = r.view.context?.figure ? ` · context ${contextText(r.view.context.figure)}` : '';
      out.push(`  ${r.id} ${r.state}${r.reason ? ` (${r.reason})` : ''}${ctx}`);
    }
  }
  for (const p of s.problems)
    out.push(`Problem: ${p.line > 0 ? `${p.file}:${p.line}:${p.column}` : p.file}: ${p.message}`);
  // Every line bounded: a 1 MB title prints its first MAX_LINE_CHARS characters (`--json` keeps the whole value).
  return out.map((l) => clipText(l, MAX_LINE_CHARS)).join('\n') + '\n';
}

function firstLine(s: string): string {
  return s.split('\n')[0]!;
}

/** `Wave <id> [status]: …` and a line per subagent that is not done (orphans first, at most 20), for the text status. */
function formatWavesText(waves: readonly WaveJson[]): string[] {
  const out: string[] = [];
  const order = ['STALE', 'RESUMED', 'ACTIVE', 'PENDING'];
  for (const w of waves) {
    out.push(`Wave ${formatWaveLine(w)}`);
    const open = w.subagents
      .filter((s) => s.disposition !== 'RESOLVED')
      .sort((a, b) => order.indexOf(a.disposition) - order.indexOf(b.disposition));
    for (const s of open.slice(0, 20)) {
      const tail =
        s.disposition === 'ACTIVE'
          ? `, orphan in ${formatAge(s.orphan_in_ms ?? 0)} without activity`
          : s.next_step !== undefined
            ? ` — next_step ${JSON.stringify(s.next_step)}`
            : '';
      out.push(
        `  ${s.sub_id} ${s.disposition}${s.checkpoint_age_ms !== null ? ` (checkpoint ${formatAge(s.checkpoint_age_ms)} old)` : ''}${tail}`,
      );
    }
    if (open.length > 20) out.push(`  … and ${open.length - 20} more (ralph status --json lists them all)`);
  }
  return out;
}
