import { elementScroll, observeElementOffset, observeElementRect, Virtualizer } from '@tanstack/virtual-core';
import { html, LitElement, nothing } from 'lit';
import { ref } from 'lit/directives/ref.js';
import { LOG_KINDS, type LogLine } from '../../src/protocol/dashboard';
import { type LogFilter, toggleKind } from '../model/filters';
import { formatClock, LOG_KIND_ICONS } from '../model/format';
import type { LogBuffer } from '../model/logBuffer';
import { plain, shown } from './shown';

/** Height of one log row, px (fixed: rows are never measured, so a million lines cost nothing to lay out). */
export const LOG_ROW_PX = 18;
/** Within this many px of the bottom counts as "at the latest line" (auto-scroll stays on). */
const BOTTOM_SLACK_PX = LOG_ROW_PX * 2;

/**
 * The Ralph log: a virtualized list (@tanstack/virtual-core) over the page's bounded {@link LogBuffer}; only the
 * visible rows are in the DOM. Follows the newest line until the person scrolls up, then offers "Jump to latest".
 * Filters by kind and text. Fires `filter-change`, `follow-change` and `open-full-log`.
 */
export class RalphLog extends LitElement {
  buffer!: LogBuffer;
  filter!: LogFilter;
  follow = true;
  /** Lines the run's log holds in all. */
  total = 0;
  private scroller: HTMLElement | null = null;
  private virtualizer: Virtualizer<HTMLElement, HTMLElement> | undefined;
  private cleanup: (() => void) | undefined;
  private programmaticScroll = false;
  private textTimer: ReturnType<typeof setTimeout> | undefined;

  protected override createRenderRoot(): HTMLElement {
    return this;
  }

  override connectedCallback(): void {
    super.connectedCallback();
    this.virtualizer = new Virtualizer<HTMLElement, HTMLElement>({
      count: 0,
      getScrollElement: () => this.scroller,
      estimateSize: () => LOG_ROW_PX,
      overscan: 12,
      observeElementRect,
      observeElementOffset,
      scrollToFn: elementScroll,
      onChange: () => this.requestUpdate(),
    });
  }

  override disconnectedCallback(): void {
    super.disconnectedCallback();
    this.cleanup?.();
    this.cleanup = undefined;
  }

  /** The buffer changed (lines appended or reset): re-render, and follow the newest line when following. */
  linesChanged(): void {
    this.requestUpdate();
    // Once after this render and once after the next layout (the virtualizer's total size can grow in between).
    if (this.follow)
      void this.updateComplete.then(() => {
        this.scrollToLatest();
        requestAnimationFrame(() => {
          if (this.follow) this.scrollToLatest();
        });
      });
  }

  protected override firstUpdated(): void {
    this.scroller = this.querySelector('.log-scroller');
    this.cleanup = this.virtualizer?._didMount();
    this.scroller?.addEventListener('scroll', () => this.onScroll(), { passive: true });
    if (this.follow) this.scrollToLatest();
  }

  protected override updated(): void {
    this.virtualizer?._willUpdate();
  }

  private onScroll(): void {
    if (this.programmaticScroll) {
      this.programmaticScroll = false;
      return;
    }
    const s = this.scroller;
    if (!s) return;
    const atBottom = s.scrollTop + s.clientHeight >= s.scrollHeight - BOTTOM_SLACK_PX;
    if (atBottom !== this.follow) this.setFollow(atBottom);
  }

  private setFollow(follow: boolean): void {
    this.follow = follow;
    this.dispatchEvent(new CustomEvent('follow-change', { detail: follow }));
    this.requestUpdate();
  }

  /** Scrolls to the newest line and turns following on. */
  scrollToLatest(): void {
    const s = this.scroller;
    if (!s) return;
    this.programmaticScroll = true;
    s.scrollTop = s.scrollHeight;
    if (!this.follow) this.setFollow(true);
  }

  private emitFilter(filter: LogFilter): void {
    this.dispatchEvent(new CustomEvent('filter-change', { detail: filter }));
  }

  private onText(e: Event): void {
    const text = (e.target as HTMLInputElement).value;
    clearTimeout(this.textTimer);
    this.textTimer = setTimeout(() => this.emitFilter({ ...this.filter, text }), 150);
  }

  protected override render(): unknown {
    const v = this.virtualizer;
    const count = this.buffer?.viewSize ?? 0;
    if (v && v.options.count !== count) v.setOptions({ ...v.options, count });
    const items = v?.getVirtualItems() ?? [];
    const held = this.buffer?.size ?? 0;
    const older = Math.max(0, this.total - held);
    return html`
      <div class="log-toolbar">
        ${LOG_KINDS.map(
          (k) =>
            html`<button
              class="chip ${this.filter.kinds[k] ? 'on' : ''}"
              data-kind=${k}
              aria-pressed=${this.filter.kinds[k] ? 'true' : 'false'}
              @click=${() => this.emitFilter(toggleKind(this.filter, k))}
            >
              ${k}
            </button>`,
        )}
        <input
          class="log-search"
          type="search"
          placeholder="Filter text"
          aria-label="Filter the log by text"
          .value=${this.filter.text}
          @input=${(e: Event) => this.onText(e)}
        />
        <span class="log-count" data-testid="log-count"
          >${count.toLocaleString()} shown of
          ${held.toLocaleString()}${older ? html` · ${older.toLocaleString()} older in the full log` : nothing}</span
        >
        <button
          class="link"
          data-testid="open-full-log"
          @click=${() => this.dispatchEvent(new CustomEvent('open-full-log'))}
        >
          <span class="codicon codicon-go-to-file"></span> Open the full log
        </button>
      </div>
      <div class="log-scroller" role="log" aria-live="off">
        <div class="log-space" ${cssom('height', `${v?.getTotalSize() ?? 0}px`)}>
          ${items.map((it) => {
            const line = this.buffer.viewLine(it.index);
            return line ? row(line, it.start) : nothing;
          })}
        </div>
      </div>
      ${this.follow ? nothing : html`<button class="jump-latest" data-testid="jump-latest" @click=${() => this.scrollToLatest()}><span class="codicon codicon-arrow-down"></span> Jump to latest</button>`}
    `;
  }
}

/**
 * Sets one style property through the CSSOM. Lit's styleMap writes a `style` attribute on first render, which the
 * page's CSP (no 'unsafe-inline' styles) blocks; CSSOM writes are allowed.
 */
export function cssom(prop: string, value: string): unknown {
  return ref((el) => {
    if (el) (el as HTMLElement).style.setProperty(prop, value);
  });
}

function row(line: LogLine, top: number): unknown {
  return html`<div
    class="log-row kind-${line.kind}"
    title=${plain(line.text)}
    ${cssom('transform', `translateY(${top}px)`)}
  >
    <span class="log-time">${formatClock(line.at)}</span
    ><span class="log-kind"><span class="codicon codicon-${LOG_KIND_ICONS[line.kind]}"></span> ${line.kind}</span
    ><span class="log-text">${shown(line.text, true)}</span>
  </div>`;
}

customElements.define('ralph-log', RalphLog);
