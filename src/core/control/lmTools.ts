import type { PlanItem, PlanSnapshot } from '../model/plan';
import { resetOfferOf } from '../sources/resetPolicy';
import { sourceArgOf, startOfferOf } from '../sources/startPolicy';
import type { StatusRun, StatusSnapshot } from './status';

/**
 * # Ralph's tools for VS Code's own agents
 *
 * What the Language Model Tools `ralph_status`, `ralph_plan`, `ralph_start`, `ralph_pause`, `ralph_stop` and
 * `ralph_reset` answer and ask, as pure functions over the status snapshot (`buildStatus`) and the plan graph
 * (`loadPlan`): the extension's adapter (src/extension/lmTools.ts) only loads those, asks, acts and returns the text.
 * A chat agent (Copilot's agent mode, any other) reads the plan, starts a verified loop on it and steers it; every
 * mutating tool asks the user first with the confirmation message built here, naming exactly what it will change.
 * Results are JSON (with a one-line summary first) so the model reads ids and states without parsing prose.
 */

/** The names of the tools, as `contributes.languageModelTools` declares them. */
export const LM_TOOL_NAMES = [
  'ralph_status',
  'ralph_plan',
  'ralph_start',
  'ralph_pause',
  'ralph_stop',
  'ralph_reset',
] as const;
export type LmToolName = (typeof LM_TOOL_NAMES)[number];

/** A ready item and its dependencies (all done, or it would not be ready). */
export interface ReadyItem {
  id: string;
  title: string;
  /** `--source` value for `ralph_start` (`flow`, `quantum` or the checklist's path). */
  source: string;
  status: PlanItem['status'];
  dependsOn: string[];
  file: string;
  line?: number;
  risky?: boolean;
  /** quantum: attempts used of the most allowed. */
  attempts?: string;
}

/** An item that is not done and not ready: what it waits on. */
export interface WaitingItem {
  id: string;
  title: string;
  source: string;
  status: PlanItem['status'];
  /** The dependencies not done yet, each with its status. */
  waitsOn: { id: string; status: string }[];
  why: string;
}

/** `ralph_plan`'s answer. */
export interface PlanReport {
  folder: string;
  /** Done over all items, every source. */
  progress: { done: number; total: number };
  /** Items a run can begin with now (`ralph_start` with `item`), in plan order. */
  ready: ReadyItem[];
  /** Open items held by dependencies or their status (blocked, out of attempts). */
  waiting: WaitingItem[];
  /** In progress (claimed by a run or a person). */
  inProgress: { id: string; title: string; source: string; assignee?: string }[];
  /** Dependency cycles, which a run refuses. */
  cycles: string[][];
  /** Files that do not parse (file:line:column: message). */
  problems: string[];
}

/** Most items listed per section of a report (a plan of thousands stays a readable answer). */
export const LM_LIST_LIMIT = 50;

/**
 * `ralph_plan`: the ready items and their dependencies, what the others wait on, and what is in progress. `limit`
 * caps each list (the counts stay whole: `progress`). Pure.
 */
export function planReport(plan: PlanSnapshot, limit = LM_LIST_LIMIT): PlanReport {
  const ready: ReadyItem[] = [];
  const waiting: WaitingItem[] = [];
  const inProgress: PlanReport['inProgress'] = [];
  const status = new Map(plan.items.map((i) => [`${i.source}\u0000${i.id}`, i.rawStatus]));
  for (const item of plan.items) {
    if (item.status === 'done') continue;
    const source = sourceArgOf(item);
    if (item.status === 'in_progress') {
      inProgress.push({
        id: item.id,
        title: item.title,
        source,
        ...(item.assignee ? { assignee: item.assignee } : {}),
      });
      continue;
    }
    const offer = startOfferOf(plan, item.id);
    if (offer.ready)
      ready.push({
        id: item.id,
        title: item.title,
        source,
        status: item.status,
        dependsOn: item.dependsOn,
        file: item.file,
        ...(item.line !== undefined ? { line: item.line } : {}),
        ...(item.risky ? { risky: true } : {}),
        ...(item.maxAttempts !== undefined ? { attempts: `${item.attempts ?? 0} of ${item.maxAttempts}` } : {}),
      });
    else
      waiting.push({
        id: item.id,
        title: item.title,
        source,
        status: item.status,
        waitsOn: offer.openDependencies.map((d) => ({
          id: d,
          status: status.get(`${item.source}\u0000${d}`) ?? 'missing',
        })),
        why: offer.why ?? 'not ready',
      });
  }
  return {
    folder: plan.folder,
    progress: { done: plan.items.filter((i) => i.status === 'done').length, total: plan.items.length },
    ready: ready.slice(0, limit),
    waiting: waiting.slice(0, limit),
    inProgress: inProgress.slice(0, limit),
    cycles: plan.cycles,
    problems: plan.problems.slice(0, limit).map((p) => `${p.file}:${p.line}:${p.column}: ${p.message}`),
  };
}

/** A run as `ralph_status` shows it. */
export interface RunBrief {
  id: string;
  state: string;
  /** The view's one line (`running`, `paused`, `waiting for an answer (US-002)`, `completed — …`). */
  stateText: string;
  item: string | null;
  iteration: number | null;
  progress: string | null;
  costUsd: number;
  pauseRequested: boolean;
  stopRequested: boolean;
  gates: { tier: string; passed: boolean | null }[];
  questions: { item: string | null; text: string }[];
  /** How a finished run ended. */
  end?: { state: string; reason: string };
}

/** `ralph_status`'s answer. */
export interface StatusReport {
  folder: string;
  progress: string;
  tasks: StatusSnapshot['tasks'];
  stories: StatusSnapshot['stories'];
  checklists: StatusSnapshot['checklists'];
  inProgress: { id: string; title: string }[];
  blocked: { id: string; title: string; reason: string | null }[];
  /** Items claimed done that no gate verified. */
  unverifiedClaims: number;
  /** Active runs (running, paused, stopping). */
  runs: RunBrief[];
  /** The newest finished run. */
  lastRun: RunBrief | null;
  problems: string[];
}

function runBrief(r: StatusRun): RunBrief {
  const v = r.view;
  return {
    id: r.id,
    state: v.state,
    stateText: v.stateText,
    item: r.current_item?.id ?? null,
    iteration: r.iteration,
    progress: v.progress ? `${v.progress.done}/${v.progress.total}` : null,
    costUsd: Math.round(v.cost.runUsd * 10_000) / 10_000,
    pauseRequested: v.pauseRequested,
    stopRequested: v.stopRequested,
    gates: v.gates.map((g) => ({ tier: g.tier, passed: g.passed })),
    questions: v.questions.map((q) => ({ item: q.item?.id ?? null, text: q.text })),
    ...(v.end ? { end: { state: v.end.state, reason: v.end.reason } } : {}),
  };
}

/** `ralph_status`: progress per source, what is in progress or blocked, the active runs and the last one. Pure. */
export function statusReport(folder: string, s: StatusSnapshot, limit = LM_LIST_LIMIT): StatusReport {
  return {
    folder,
    progress: s.progress,
    tasks: s.tasks,
    stories: s.stories,
    checklists: s.checklists,
    inProgress: s.in_progress.slice(0, limit).map((i) => ({ id: i.id, title: i.title })),
    blocked: s.blocked.slice(0, limit).map((b) => ({ id: b.id, title: b.title, reason: b.reason })),
    unverifiedClaims: s.unverified_claims.length,
    runs: s.runs.map(runBrief),
    lastRun: s.recent_runs[0] ? runBrief(s.recent_runs[0]) : null,
    problems: s.problems.slice(0, limit).map((p) => `${p.file}:${p.line}:${p.column}: ${p.message}`),
  };
}

/** The one-line summary heading a tool's JSON. */
export function summaryLine(tool: 'ralph_status' | 'ralph_plan', r: StatusReport | PlanReport): string {
  if (tool === 'ralph_plan') {
    const p = r as PlanReport;
    return `Ralph plan of ${p.folder}: ${p.progress.done}/${p.progress.total} done, ${p.ready.length} ready, ${p.waiting.length} waiting, ${p.inProgress.length} in progress.`;
  }
  const s = r as StatusReport;
  const run = s.runs[0];
  return `Ralph status of ${s.folder}: ${s.progress} done; ${run ? `run ${run.id} ${run.stateText}` : 'no active run'}.`;
}

/**
 * The workspace folder a tool acts on: the one named (a workspace folder's path or name), else the only one. Several
 * and none named, or a name that is not a folder of the workspace, is a refusal naming the folders. Pure.
 */
export function resolveToolFolder(
  named: string | undefined,
  folders: readonly { path: string; name: string }[],
): { folder: string } | { refusal: string } {
  const list = folders.map((f) => f.path).join(', ') || 'none';
  if (named) {
    const f = folders.find((x) => x.path === named || x.name === named);
    return f ? { folder: f.path } : { refusal: `"${named}" is not a folder of this workspace (folders: ${list}).` };
  }
  if (folders.length === 1) return { folder: folders[0]!.path };
  if (!folders.length) return { refusal: 'No folder is open in this window.' };
  return { refusal: `This workspace has several folders: call the tool again with \`folder\` set to one of ${list}.` };
}

/** Input of `ralph_start`. */
export interface StartToolInput {
  folder?: string;
  /** Begin with this task, story or box (a ready one: see `ralph_plan`). */
  item?: string;
  /** `flow`, `quantum`, or a checklist path. */
  source?: string;
}

/** Input of `ralph_pause` / `ralph_stop`. */
export interface ControlToolInput {
  folder?: string;
}

/** Input of `ralph_reset`. */
export interface ResetToolInput {
  folder?: string;
  id: string;
  /** Also reset the done, blocked or failed items that depend on it. */
  cascade?: boolean;
}

/** What a mutating tool does if the user confirms, or why it will not (then no confirmation is asked). */
export type ToolDecision<A> =
  { ok: true; args: A; title: string; message: string; invocation: string } | { ok: false; refusal: string };

/** Facts `ralph_start` decides on: the plan, and whether a run is already active there. */
export interface StartFacts {
  plan: PlanSnapshot;
  activeRun: { id: string; stateText: string } | null;
  /** Sources a run can take (`--source` values). */
  sources: string[];
  /** The workspace is trusted (Restricted Mode runs nothing). */
  trusted: boolean;
}

/**
 * `ralph_start`: which run to start, and the confirmation naming it, or why not (Restricted Mode, a run already
 * active, no source, several sources and none named, an item that is not ready, with its source's next ready one).
 * Pure.
 */
export function decideStart(
  input: StartToolInput,
  folder: string,
  f: StartFacts,
): ToolDecision<{ folder: string; source?: string; item?: string }> {
  if (!f.trusted)
    return { ok: false, refusal: 'Ralph runs no agent in Restricted Mode: the user must trust this workspace first.' };
  if (f.activeRun)
    return {
      ok: false,
      refusal: `A Ralph run is already active in ${folder}: ${f.activeRun.id} (${f.activeRun.stateText}). Use ralph_status to follow it, ralph_pause or ralph_stop to steer it.`,
    };
  let source = input.source;
  if (input.item) {
    const offer = startOfferOf(f.plan, input.item);
    if (!offer.ready)
      return {
        ok: false,
        refusal: `${input.item} cannot start now: ${offer.why}.${offer.next ? ` The next ready item of its source is ${offer.next}.` : ''}`,
      };
    source ??= offer.source;
  }
  if (!source) {
    if (!f.sources.length)
      return {
        ok: false,
        refusal: `No task source in ${folder}: add quantum.json, .flow/, RALPH_TASK.md, PROMPT.md or specs/<name>/tasks.md (Ralph: New Plan… scaffolds one).`,
      };
    if (f.sources.length > 1)
      return {
        ok: false,
        refusal: `${folder} has several task sources (${f.sources.join(', ')}): call ralph_start again with \`source\` set to one of them, or with \`item\`.`,
      };
    source = f.sources[0];
  } else if (!input.item && !f.sources.includes(source))
    return {
      ok: false,
      refusal: `No task source "${source}" in ${folder}; there are: ${f.sources.join(', ') || 'none'}.`,
    };
  const where = input.item ? `beginning with ${input.item}` : `on ${source}`;
  const left = f.plan.items.filter((i) => i.status !== 'done').length;
  return {
    ok: true,
    args: { folder, source, ...(input.item ? { item: input.item } : {}) },
    title: 'Start a Ralph loop?',
    message: `Ralph will run the agent CLI unattended in ${folder}, ${where}, one iteration at a time, until every item (${left} not done) is verified done by its gate or the run stops at a cap. The agent edits files and runs commands with your permissions.`,
    invocation: `Starting a Ralph loop ${where}`,
  };
}

/**
 * `ralph_pause` / `ralph_stop`: the confirmation for the active run, or why there is nothing to do. Both act after
 * the current iteration (the sentinel files `ralph pause` / `ralph stop` write). Pure.
 */
export function decideControl(
  action: 'pause' | 'stop',
  folder: string,
  activeRun: { id: string; stateText: string; paused: boolean } | null,
): ToolDecision<{ folder: string }> {
  if (!activeRun) return { ok: false, refusal: `No active Ralph run in ${folder}.` };
  if (action === 'pause' && activeRun.paused)
    return { ok: false, refusal: `Ralph run ${activeRun.id} is already paused (Ralph: Resume goes on).` };
  return {
    ok: true,
    args: { folder },
    title: action === 'pause' ? 'Pause the Ralph run?' : 'Stop the Ralph run?',
    message:
      action === 'pause'
        ? `Ralph run ${activeRun.id} (${activeRun.stateText}) will pause after its current iteration; Ralph: Resume goes on.`
        : `Ralph run ${activeRun.id} (${activeRun.stateText}) will stop after its current iteration; its items keep their status.`,
    invocation: action === 'pause' ? `Pausing Ralph run ${activeRun.id}` : `Stopping Ralph run ${activeRun.id}`,
  };
}

/**
 * `ralph_reset`: the confirmation naming every item the reset sets back (the same rule as `ralph task reset
 * [--cascade]` and the tree's reset), or why it cannot be reset. Pure.
 */
export function decideReset(
  input: ResetToolInput,
  folder: string,
  plan: PlanSnapshot,
): ToolDecision<{ folder: string; id: string; cascade: boolean }> {
  const offer = resetOfferOf(plan, input.id);
  if (!offer.resettable) return { ok: false, refusal: `${input.id} cannot be reset: ${offer.why}.` };
  const cascade = input.cascade === true && offer.cascade.length > 0;
  const item = plan.items.find((i) => i.id === input.id);
  const back = item?.source === 'quantum' ? 'pending' : 'todo';
  const also = cascade
    ? ` Its dependents ${offer.cascade.join(', ')} go back too.`
    : offer.cascade.length
      ? ` Its dependents (${offer.cascade.join(', ')}) are left as they are (cascade not asked).`
      : '';
  return {
    ok: true,
    args: { folder, id: input.id, cascade },
    title: `Reset ${input.id}?`,
    message: `${input.id} (${item?.title ?? ''}, ${item?.rawStatus ?? ''}) goes back to ${back} in ${folder}.${also}`,
    invocation: `Resetting ${input.id}${cascade ? ' and its dependents' : ''}`,
  };
}
