import { html, LitElement, nothing } from 'lit';
// The selection follows the host's pinned run even after the person used the list (an attribute would not).
import { live } from 'lit/directives/live.js';
import type {
  ControlAction,
  GateRow,
  HostMessage,
  LaneRow,
  PageRequest,
  RunHeader,
} from '../../src/protocol/dashboard';
import { enabledControls } from '../model/controls';
import { filterFromState, type LogFilter } from '../model/filters';
import { formatClock, formatDuration, formatTokens, formatUsd } from '../model/format';
import { hasRemoteLanes, laneColorVar, laneDisplayOf, lanesSummaryOf, workersTextOf } from '../model/lanes';
import { LogBuffer } from '../model/logBuffer';
import { initialPageState, reducePage, type PageState } from '../model/pageState';
import { nextSort, sortTasks, TASK_SORT_KEYS, type TaskSort, type TaskSortKey } from '../model/tasks';
import { postToHost, vscodeApi } from '../vscodeApi';
import { cssom, type RalphLog } from './logView';
import { plain, shown } from './shown';
import type { RalphTokenChart } from './tokenChart';
import './logView';
import './tokenChart';

/** Lines the page keeps (older ones are in the full log, opened in an editor). */
export const PAGE_LOG_CAPACITY = 20_000;

const CONTROLS: { action: ControlAction; label: string; icon: string; title: string }[] = [
  { action: 'start', label: 'Start', icon: 'play', title: 'Start a run (Ralph: Start)' },
  { action: 'pause', label: 'Pause', icon: 'debug-pause', title: 'Pause after this iteration' },
  { action: 'resume', label: 'Resume', icon: 'debug-continue', title: 'Resume the paused run' },
  { action: 'stop', label: 'Stop', icon: 'debug-stop', title: 'Stop after this iteration' },
  { action: 'cancel', label: 'Cancel', icon: 'close', title: "End this window's run now (the agent first)" },
];

const LANE_ICONS: Record<LaneRow['activity'], string> = {
  idle: 'circle-outline',
  agent: 'loading codicon-modifier-spin',
  gate: 'beaker',
  waiting: 'comment-discussion',
};

/** A parallel run: more than one lane, or a lane other than the sequential run's lane 0. */
function isParallel(lanes: readonly LaneRow[]): boolean {
  return lanes.length > 1 || lanes.some((l) => l.lane !== 0);
}

const TASK_COLUMNS: Record<TaskSortKey, string> = {
  itemId: 'Task',
  iterations: 'Iterations',
  input: 'Input',
  output: 'Output',
  cacheRead: 'Cache read',
  costUsd: 'Cost',
};

/**
 * What the task table names a task by: its title (a checkbox's id is only `RALPH_TASK.md:4`), with the id first when
 * it says something of its own (`US-1 Login`, `fn-1.2 Parser`).
 */
export function taskName(t: { itemId: string; title: string }): string {
  const title = t.title.trim();
  if (!title || title === t.itemId) return t.itemId;
  return /:\d+$/.test(t.itemId) ? title : `${t.itemId} ${title}`;
}

/**
 * The dashboard page: header and controls, a waiting question, tokens (chart and cost per task), gates and the
 * Ralph log. It renders only what the host sends through the protocol and asks the host for everything else.
 */
export class RalphDashboard extends LitElement {
  private page: PageState = initialPageState();
  private readonly filter: LogFilter;
  private readonly buffer: LogBuffer;
  private sort: TaskSort = { key: 'costUsd', descending: true };
  private follow: boolean;
  private nextId = 1;
  private error: string | null = null;
  private revealed: string | null = null;
  private clock: ReturnType<typeof setInterval> | undefined;

  constructor() {
    super();
    const saved = vscodeApi().getState() ?? {};
    this.filter = filterFromState(saved.filter);
    this.buffer = new LogBuffer(PAGE_LOG_CAPACITY, this.filter);
    const s = saved.sort as Partial<TaskSort> | undefined;
    if (s && TASK_SORT_KEYS.includes(s.key as TaskSortKey))
      this.sort = { key: s.key as TaskSortKey, descending: !!s.descending };
    this.follow = saved.follow !== false;
  }

  protected override createRenderRoot(): HTMLElement {
    return this;
  }

  override connectedCallback(): void {
    super.connectedCallback();
    this.clock = setInterval(() => {
      if (this.page.data.run?.live) this.requestUpdate();
    }, 1000);
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    clearInterval(this.clock);
  }

  /** A parsed message from the host. */
  receive(msg: HostMessage): void {
    if (msg.type === 'reply') {
      this.error = msg.ok ? null : (msg.error ?? 'the request failed');
      this.requestUpdate();
      return;
    }
    const { state, effects } = reducePage(this.page, msg);
    this.page = state;
    let logChanged = false;
    for (const fx of effects) {
      if (fx.kind === 'resync') postToHost({ type: 'resync', lastSeq: fx.lastSeq });
      else if (fx.kind === 'resetLog') {
        this.buffer.reset(fx.lines);
        logChanged = true;
      } else if (fx.kind === 'appendLog') {
        this.buffer.append(fx.lines);
        logChanged = true;
      } else if (fx.kind === 'reveal') this.reveal(fx.itemId);
    }
    this.requestUpdate();
    if (logChanged) this.querySelector<RalphLog>('ralph-log')?.linesChanged();
  }

  private request(request: PageRequest): void {
    postToHost({ type: 'request', id: this.nextId++, request });
  }

  private saveUi(): void {
    vscodeApi().setState({ filter: this.filter, sort: this.sort, follow: this.follow });
  }

  private setFilter(f: LogFilter): void {
    Object.assign(this.filter, f);
    this.buffer.setFilter(this.filter);
    this.saveUi();
    this.requestUpdate();
    this.querySelector<RalphLog>('ralph-log')?.linesChanged();
  }

  private reveal(itemId: string | null): void {
    this.revealed = itemId;
    if (itemId) this.setFilter({ ...this.filter, text: itemId });
    void this.updateComplete.then(() =>
      this.querySelector(`[data-task="${CSS.escape(itemId ?? '')}"]`)?.scrollIntoView({ block: 'nearest' }),
    );
  }

  protected override updated(): void {
    const chart = this.querySelector<RalphTokenChart>('ralph-token-chart');
    const run = this.page.data.run;
    if (chart) {
      chart.points = this.page.data.tokens;
      chart.warnAt = run?.context.warnAt ?? 0;
      chart.rotateAt = run?.context.rotateAt ?? 0;
      chart.costUsd = run?.costUsd ?? 0;
      chart.requestUpdate();
    }
    const log = this.querySelector<RalphLog>('ralph-log');
    if (log) {
      log.buffer = this.buffer;
      log.filter = this.filter;
      log.total = this.page.data.logTotal;
      log.requestUpdate();
    }
  }

  protected override render(): unknown {
    const d = this.page.data;
    const run = d.run;
    return html` ${this.header(run)} ${isParallel(d.lanes) ? this.laneTable(d.lanes) : nothing}
      ${this.error ? html`<div class="error-line" role="alert"><span class="codicon codicon-error"></span> ${shown(this.error, true)}</div>` : nothing}
      ${run?.question ? this.question(run) : nothing}
      <section class="panel tokens">
        <h2>
          <span class="codicon codicon-pulse"></span> Tokens
          <span class="sub">cost ${formatUsd(run?.costUsd ?? 0)} (the agent's estimate)</span>
        </h2>
        <ralph-token-chart></ralph-token-chart>
        ${this.taskTable()}
      </section>
      <section class="panel gates">
        <h2>
          <span class="codicon codicon-verified"></span> Gates
          <span class="sub">${d.gates.length} run${d.gates.length === 1 ? '' : 's'}</span>
        </h2>
        ${this.gateTable(d.gates)}
      </section>
      <section class="panel log">
        <h2><span class="codicon codicon-output"></span> Ralph log</h2>
        <ralph-log
          .buffer=${this.buffer}
          .filter=${this.filter}
          .follow=${this.follow}
          .total=${d.logTotal}
          @filter-change=${(e: CustomEvent<LogFilter>) => this.setFilter(e.detail)}
          @follow-change=${(e: CustomEvent<boolean>) => {
            this.follow = e.detail;
            this.saveUi();
          }}
          @open-full-log=${() => this.request({ method: 'openFullLog' })}
        ></ralph-log>
      </section>`;
  }

  private header(run: RunHeader | null): unknown {
    const enabled = enabledControls(run);
    const d = this.page.data;
    const elapsed = run?.startedAt ? (run.endedAt ?? Date.now()) - run.startedAt : null;
    return html`<header class="run-header">
      <div class="run-line">
        <span class="state state-${run?.state ?? 'idle'}" data-testid="run-state">${run?.state ?? 'no run yet'}</span>
        ${run?.stateDetail ? html`<span class="detail">${shown(run.stateDetail, true)}</span>` : nothing}
        <select
          class="run-pick"
          aria-label="Run shown"
          @change=${(e: Event) => {
            const v = (e.target as HTMLSelectElement).value;
            this.request({ method: 'pickRun', runId: v || null });
          }}
        >
          <option value="" .selected=${live(d.pinnedRunId === null)}>Follow the live or latest run</option>
          ${[...d.runs].reverse().map((r) => html`<option value=${r.runId} .selected=${live(d.pinnedRunId === r.runId)}>${plain(r.label)} — ${r.state}</option>`)}
        </select>
        ${run && !run.live ? html`<span class="static-note">shown from its log</span>` : nothing}
      </div>
      ${
        run
          ? html`<dl class="facts">
              <div>
                <dt>Source</dt>
                <dd>${run.source ? shown(run.source, true) : '—'}</dd>
              </div>
              <div>
                <dt>Agent</dt>
                <dd data-testid="run-agent">${run.agent ? shown(run.agent, true) : '—'}</dd>
              </div>
              ${
                isParallel(d.lanes)
                  ? html`<div>
                      <dt>Lanes</dt>
                      <dd data-testid="run-lanes">${lanesSummaryOf(d.lanes)}</dd>
                    </div>`
                  : html`<div>
                      <dt>Item</dt>
                      <dd data-testid="run-item">
                        ${run.item ? shown(`${run.item.id} ${run.item.title}`, true) : '—'}
                      </dd>
                    </div>`
              }
              ${
                isParallel(d.lanes)
                  ? nothing
                  : html`<div>
                      <dt>Attempt</dt>
                      <dd>${run.attempt ? `${run.attempt}${run.maxAttempts ? ` of ${run.maxAttempts}` : ''}` : '—'}</dd>
                    </div>`
              }
              ${
                run.workers
                  ? html`<div>
                      <dt>Workers</dt>
                      <dd data-testid="run-workers">${shown(workersTextOf(run.workers), true)}</dd>
                    </div>`
                  : nothing
              }
              <div>
                <dt>Iteration</dt>
                <dd data-testid="run-iteration">
                  ${run.iteration}${run.maxIterations ? ` / ${run.maxIterations}` : ''}
                </dd>
              </div>
              <div>
                <dt>Elapsed</dt>
                <dd>${elapsed === null ? '—' : formatDuration(elapsed)}</dd>
              </div>
              <div>
                <dt>Progress</dt>
                <dd data-testid="run-progress">${run.progress.done}/${run.progress.total} done</dd>
              </div>
              ${
                isParallel(d.lanes)
                  ? nothing
                  : html`<div>
                      <dt>Context</dt>
                      <dd data-testid="run-context">${run.context.text || '—'}</dd>
                    </div>`
              }
            </dl>`
          : html`<p class="empty">
              No Ralph run in this workspace yet. Start one to see its tokens, gates and log here.
            </p>`
      }
      <div class="controls" role="toolbar" aria-label="Run controls">
        ${CONTROLS.map(
          (c) =>
            html`<button
              class="control"
              data-action=${c.action}
              title=${c.title}
              ?disabled=${!enabled[c.action]}
              @click=${() => this.request({ method: 'control', action: c.action, runId: c.action === 'start' ? null : (run?.runId ?? null) })}
            >
              <span class="codicon codicon-${c.icon}"></span> ${c.label}
            </button>`,
        )}
      </div>
    </header>`;
  }

  /** One row per lane: number, item, agent, worker (remote lanes), attempt, iteration, context gauge (with the warn and rotate lines), state. */
  private laneTable(lanes: readonly LaneRow[]): unknown {
    // A Worker column only when a lane runs on another machine (remote lanes, `ralph worker`).
    const remote = hasRemoteLanes(lanes);
    return html`<section class="panel lanes" data-testid="lanes">
      <h2><span class="codicon codicon-layers"></span> Lanes <span class="sub">${lanesSummaryOf(lanes)}</span></h2>
      <table class="lanes" data-testid="lane-table">
        <thead>
          <tr>
            <th>Lane</th>
            <th>Item</th>
            <th>Agent</th>
            ${remote ? html`<th>Worker</th>` : nothing}
            <th>Attempt</th>
            <th>Iteration</th>
            <th>Context</th>
            <th>Cost</th>
            <th>State</th>
          </tr>
        </thead>
        <tbody>
          ${lanes.map((l) => {
            const x = laneDisplayOf(l);
            return html`<tr class="lane-row lane-${x.activity}" data-lane=${x.lane} data-item=${l.item?.id ?? ''}>
              <td class="lane-no">
                <span
                  class="lane-swatch"
                  title="its line in the chart"
                  ${cssom('background-color', `var(${laneColorVar(x.lane)})`)}
                ></span
                >#${x.lane}
              </td>
              <td title=${plain(x.item)}>${shown(x.item, true)}</td>
              <td data-testid="lane-agent">${shown(x.agent, true)}</td>
              ${remote ? html`<td data-testid="lane-worker">${shown(x.worker, true)}</td>` : nothing}
              <td>${x.attempt}</td>
              <td>${x.iteration}</td>
              <td>
                <div class="lane-context">
                  <div
                    class="gauge gauge-${x.level}"
                    role="meter"
                    aria-label="Context of lane ${x.lane}"
                    aria-valuemin="0"
                    aria-valuemax="100"
                    aria-valuenow=${x.percent}
                    ${cssom('--pct', `${x.percent}%`)}
                  >
                    <div class="gauge-fill"></div>
                    ${
                      x.level === 'none'
                        ? nothing
                        : html`<div class="gauge-line warn" ${cssom('left', `${x.warnPercent}%`)}></div>
                            <div class="gauge-line rotate" ${cssom('left', `${x.rotatePercent}%`)}></div>`
                    }
                  </div>
                  <span class="gauge-text">${x.contextText}</span>
                </div>
              </td>
              <td>${l.costUsd ? formatUsd(l.costUsd) : '—'}</td>
              <td class="lane-state"><span class="codicon codicon-${LANE_ICONS[x.activity]}"></span> ${x.state}</td>
            </tr>`;
          })}
        </tbody>
      </table>
    </section>`;
  }

  private question(run: RunHeader): unknown {
    const q = run.question!;
    const send = () => {
      const box = this.querySelector<HTMLTextAreaElement>('.answer-box');
      const text = box?.value.trim() ?? '';
      if (!text) return;
      this.request({ method: 'answer', runId: run.runId, itemId: q.itemId, text });
      if (box) box.value = '';
    };
    return html`<section class="panel question" data-testid="question">
      <h2>
        <span class="codicon codicon-question"></span> The agent asks${q.itemId ? ` (${plain(q.itemId)})` : ''}
        <span class="sub">since ${formatClock(q.askedAt)}</span>
      </h2>
      <p class="question-text">${shown(q.text)}</p>
      <textarea class="answer-box" rows="3" aria-label="Your answer" placeholder="Your answer"></textarea>
      <button class="primary" data-testid="answer" @click=${send}>
        <span class="codicon codicon-send"></span> Answer
      </button>
    </section>`;
  }

  private taskTable(): unknown {
    const tasks = sortTasks(this.page.data.tasks, this.sort);
    if (!tasks.length) return html`<p class="empty">No task has finished an iteration yet.</p>`;
    const th = (k: TaskSortKey) =>
      html`<th aria-sort=${this.sort.key === k ? (this.sort.descending ? 'descending' : 'ascending') : 'none'}>
        <button
          class="sort"
          @click=${() => {
            this.sort = nextSort(this.sort, k);
            this.saveUi();
            this.requestUpdate();
          }}
        >
          ${TASK_COLUMNS[k]}${this.sort.key === k ? html` <span class="codicon codicon-${this.sort.descending ? 'arrow-down' : 'arrow-up'}"></span>` : nothing}
        </button>
      </th>`;
    return html`<table class="tasks" data-testid="task-table">
      <thead>
        <tr>
          ${TASK_SORT_KEYS.map(th)}
        </tr>
      </thead>
      <tbody>
        ${tasks.map(
          (t) =>
            html`<tr data-task=${t.itemId} class=${this.revealed === t.itemId ? 'revealed' : ''}>
              <td class="task-name" title=${plain(t.itemId)}>${shown(taskName(t), true)}</td>
              <td>${t.iterations}</td>
              <td>${formatTokens(t.input)}</td>
              <td>${formatTokens(t.output)}</td>
              <td>${formatTokens(t.cacheRead)}</td>
              <td>${formatUsd(t.costUsd)}</td>
            </tr>`,
        )}
      </tbody>
    </table>`;
  }

  private gateTable(gates: readonly GateRow[]): unknown {
    if (!gates.length) return html`<p class="empty">No gate has run yet.</p>`;
    return html`<table class="gates" data-testid="gate-table">
      <thead>
        <tr>
          <th>Tier</th>
          <th>Exit</th>
          <th>Duration</th>
          <th>When</th>
          <th>Command</th>
          <th>First failing lines</th>
        </tr>
      </thead>
      <tbody>
        ${[...gates].reverse().map(
          (g) =>
            html`<tr
              class="gate-row ${g.passed === null ? 'pending' : g.passed ? 'passed' : 'failed'} ${g.hasLog ? 'has-log' : ''}"
              data-gate=${g.id}
              title=${g.hasLog ? 'Open the gate log' : ''}
              @click=${() => g.hasLog && this.request({ method: 'openGateLog', gateId: g.id })}
            >
              <td class="gate-tier">
                <span
                  class="codicon codicon-${g.passed === null ? 'loading codicon-modifier-spin' : g.passed ? 'pass' : 'error'}"
                ></span>
                ${g.tier}
              </td>
              <td>${g.exitCode ?? '…'}</td>
              <td>${g.durationMs === null ? '…' : formatDuration(g.durationMs)}</td>
              <td>${formatClock(g.at)}</td>
              <td class="mono">${shown(g.command, true)}</td>
              <td class="mono fail-lines">${shown(g.failingLines.slice(0, 3).join('\n'))}</td>
            </tr>`,
        )}
      </tbody>
    </table>`;
  }
}

customElements.define('ralph-dashboard', RalphDashboard);
