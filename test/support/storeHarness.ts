/**
 * Drives a {@link RunStore} with fakes of its core dependencies: runs listed by the test, logs fed entry by entry
 * through the real `RunView` and token reducers, a hand-moved clock, and plans given by the test. For unit tests of
 * the store, the gauge and the notifications (on the fake `vscode`), and for the store bench.
 */
import type { RunInfo } from '../../src/core/control/runs';
import { emptyRunTokens, reduceRunTokens } from '../../src/core/control/runTokens';
import { emptyRunView, reduceRunView, withFollowEnd, type FollowEnd } from '../../src/core/control/runView';
import type { PlanSnapshot } from '../../src/core/model/plan';
import type { EngineEvent, RunLogEntry } from '../../src/core/model/runEvent';
import { gaugeRunOf, listedRunUpdate, runFactsOf, type RunUpdate } from '../../src/extension/runFollowing';
import { RunStore } from '../../src/extension/runStore';
import type { ThrottleClock } from '../../src/extension/throttle';

/** A clock tests move by hand (timers fire in order as time passes). */
export class ManualClock implements ThrottleClock {
  t = 0;
  private timers: { at: number; fn: () => void; id: number }[] = [];
  private nextId = 1;
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.timers.push({ at: this.t + ms, fn, id });
    return id;
  }
  clearTimeout(h: unknown): void {
    this.timers = this.timers.filter((x) => x.id !== h);
  }
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((x) => x !== due);
      this.t = due.at;
      due.fn();
    }
    this.t = end;
  }
  get pending(): number {
    return this.timers.length;
  }
}

/** One run the harness feeds: append events, end it. */
export class FakeRun {
  private seq = 0;
  private view;
  private tokens = emptyRunTokens();
  listeners: ((u: RunUpdate) => void)[] = [];
  constructor(readonly info: RunInfo) {
    this.view = emptyRunView(info.id, info.kind);
  }
  /** Appends events to the run's log; followers see them as one batch. */
  emit(...events: EngineEvent[]): void {
    for (const e of events) {
      const entry = {
        ...e,
        seq: ++this.seq,
        at: new Date(Date.UTC(2026, 11, 1, 9, 0, 0, this.seq)).toISOString(),
        lane: 0,
      } as RunLogEntry;
      this.view = reduceRunView(this.view, entry);
      this.tokens = reduceRunTokens(this.tokens, entry);
    }
    this.push();
  }
  /** The follower saw the run end (or crash). */
  end(end: FollowEnd): void {
    this.view = withFollowEnd(this.view, end);
    this.push();
  }
  update(): RunUpdate {
    const view = this.view;
    const tokens = this.tokens;
    return { view, facts: runFactsOf(view, this.info), gauge: (name) => gaugeRunOf(view, tokens, name) };
  }
  private push(): void {
    const u = this.update();
    for (const l of this.listeners) l(u);
  }
}

export function runInfo(id: string, over: Partial<RunInfo> = {}): RunInfo {
  return {
    id,
    kind: 'ralph',
    dir: `/w/.ralph/runs/${id}`,
    state: 'running',
    active: true,
    iteration: 0,
    currentEpic: null,
    currentTask: null,
    currentItem: null,
    paused: false,
    stopped: false,
    startedAt: `2026-12-01T09:00:00.000Z`,
    ...over,
  };
}

export const started = (runId: string): EngineEvent => ({
  type: 'runStarted',
  runId,
  folder: '/w',
  source: 'checklist',
  agent: 'claude',
  maxIterations: 5,
  gates: {},
});
export const iteration = (n: number, item = 'T-1'): EngineEvent => ({
  type: 'iterationStarted',
  iteration: n,
  item: { source: 'checklist', id: item, title: item },
  attempt: 1,
  attemptKind: 'first',
  purpose: 'work',
});
export const agent = (n: number): EngineEvent => ({
  type: 'agentStarted',
  iteration: n,
  pid: 4242,
  command: 'claude -p',
});
export const tokensAt = (n: number, contextTokens: number, costUsd = 0.01): EngineEvent => ({
  type: 'tokens',
  iteration: n,
  contextTokens,
  contextWindow: 200_000,
  rotateAt: 170_000,
  warnAt: 148_750,
  totals: { input: 100, output: contextTokens / 100, cacheRead: contextTokens, cacheCreation: 10 },
  costUsd,
});
export const ended = (n: number, costUsd = 0.5): EngineEvent => ({
  type: 'iterationEnded',
  iteration: n,
  ending: 'natural',
  detail: 'ok',
  totals: { tokens: { input: 100, output: 200, cacheRead: 1000, cacheCreation: 10 }, costUsd },
  exitCode: 0,
});
export const runEnded = (): EngineEvent => ({
  type: 'runEnded',
  state: 'completed',
  reason: 'all done',
  completionReason: 'DONE',
  exitCode: 0,
  iterations: 1,
  costUsd: 0.5,
  done: 1,
  total: 1,
});

export interface Harness {
  store: RunStore;
  clock: ManualClock;
  runs: Map<string, FakeRun>;
  /** Adds (or updates) a run in the folder's listing (as `ralph run` in a terminal would), and re-lists. */
  addRun(info: RunInfo, folder?: string): FakeRun;
  contexts: Map<string, boolean>;
  logs: string[];
  plans: Map<string, PlanSnapshot>;
  /** Folders the store sees. */
  folders: { folder: string; name: string }[];
}

/** A started store over folder `/w` (and any `folders` given). */
export function storeHarness(
  opts: { folders?: { folder: string; name: string }[]; loadPlan?: (folder: string) => Promise<PlanSnapshot> } = {},
): Harness {
  const clock = new ManualClock();
  const runs = new Map<string, FakeRun>();
  const listed = new Map<string, RunInfo[]>();
  const contexts = new Map<string, boolean>();
  const logs: string[] = [];
  const plans = new Map<string, PlanSnapshot>();
  const folders = opts.folders ?? [{ folder: '/w', name: 'w' }];
  const store = new RunStore({
    folders: () => folders,
    listRuns: (folder) => listed.get(folder) ?? [],
    initial: (_f, info) => listedRunUpdate(info, emptyRunView(info.id, info.kind), emptyRunTokens()),
    follow: (_folder, info, onUpdate) => {
      const r = runs.get(info.id)!;
      r.listeners.push(onUpdate);
      return {
        dispose: () => {
          r.listeners = r.listeners.filter((l) => l !== onUpdate);
        },
      };
    },
    loadPlan:
      opts.loadPlan ??
      (async (folder) => plans.get(folder) ?? { folder, roots: [], items: [], problems: [], cycles: [] }),
    setContext: (k, v) => contexts.set(k, v),
    log: { info: (c, m) => logs.push(`info [${c}] ${m}`), warn: (c, m) => logs.push(`warn [${c}] ${m}`) },
    clock,
    now: () => Date.UTC(2026, 11, 1, 9) + clock.t,
  });
  store.start();
  return {
    store,
    clock,
    runs,
    contexts,
    logs,
    plans,
    folders,
    addRun(info, folder = '/w') {
      const r = runs.get(info.id) ?? new FakeRun(info);
      runs.set(info.id, r);
      listed.set(folder, [...(listed.get(folder) ?? []).filter((x) => x.id !== info.id), info]);
      store.refreshRuns(folder);
      return r;
    },
  };
}
