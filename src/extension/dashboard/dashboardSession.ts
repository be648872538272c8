import {
  PROTOCOL_VERSION,
  parsePageMessage,
  type DashboardState,
  type HostMessage,
  type PageRequest,
  type UpdateOp,
} from '../../protocol/dashboard';
import { coalesceOps } from './runTrack';

/** What the host does for a page request; errors thrown become an error reply (and a log line). */
export interface DashboardActions {
  handle(request: PageRequest): Promise<void>;
}

export interface SessionDeps {
  /** Posts to the page (`webview.postMessage`); resolves false when the page did not take it. */
  post(msg: HostMessage): Thenable<boolean> | Promise<boolean> | boolean;
  /** The whole state now (for snapshots). */
  state(): DashboardState;
  actions: DashboardActions;
  log: { info(component: string, msg: string): void; warn(component: string, msg: string): void };
  /** Updates are batched for this long, ms (default 50): a burst of events makes one message. */
  flushMs?: number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (t: unknown) => void;
}

/**
 * One page's conversation with the host: nothing is posted before the page's `ready`; then one snapshot, then
 * numbered updates (batched, coalesced); a `resync` or becoming visible again sends a fresh snapshot. While the
 * panel is hidden nothing is posted and the next visibility sends a snapshot. Every message from the page is
 * parsed with the protocol's schema first: a forged or malformed one is refused and logged, never acted on.
 */
export class DashboardSession {
  private seq = 0;
  private ready = false;
  private visible = true;
  private dirty = false;
  private queue: UpdateOp[] = [];
  private timer: unknown;
  private disposed = false;
  /** Messages refused so far (tests and the log read it). */
  refused = 0;

  constructor(private readonly deps: SessionDeps) {}

  /** A message from the page (untrusted). */
  async receive(raw: unknown): Promise<void> {
    const parsed = parsePageMessage(raw);
    if (!parsed.ok) {
      this.refused++;
      this.deps.log.warn('dashboard', parsed.error);
      const id = raw && typeof raw === 'object' ? (raw as { id?: unknown }).id : undefined;
      if (typeof id === 'number' && Number.isInteger(id) && id >= 0)
        this.post({ type: 'reply', id, ok: false, error: 'refused: malformed request' });
      return;
    }
    const msg = parsed.message;
    switch (msg.type) {
      case 'ready':
        if (msg.v !== PROTOCOL_VERSION) {
          this.refused++;
          this.deps.log.warn('dashboard', `refused ready: page protocol ${msg.v}, host ${PROTOCOL_VERSION}`);
          return;
        }
        this.ready = true;
        this.sendSnapshot();
        return;
      case 'resync':
        this.deps.log.info('dashboard', `page asked for a snapshot after update ${msg.lastSeq ?? '-'}`);
        if (this.ready) this.sendSnapshot();
        return;
      case 'request':
        try {
          await this.deps.actions.handle(msg.request);
          this.post({ type: 'reply', id: msg.id, ok: true });
        } catch (err) {
          const text = err instanceof Error ? err.message : String(err);
          this.deps.log.warn('dashboard', `${msg.request.method} failed: ${text}`);
          this.post({ type: 'reply', id: msg.id, ok: false, error: text });
        }
        return;
    }
  }

  /** Queues updates for the page (sent in the next flush, or folded into the next snapshot). */
  push(ops: readonly UpdateOp[]): void {
    if (!ops.length || this.disposed) return;
    if (!this.ready || !this.visible) {
      this.dirty = true;
      return;
    }
    this.queue.push(...ops);
    if (this.timer === undefined)
      this.timer = (this.deps.setTimer ?? setTimeout)(() => this.flush(), this.deps.flushMs ?? 50);
  }

  /** The whole state changed (another run shown): a snapshot replaces the page's state. */
  resend(): void {
    if (this.ready && this.visible) this.sendSnapshot();
    else this.dirty = true;
  }

  /** The panel became visible or hidden. */
  setVisible(visible: boolean): void {
    this.visible = visible;
    if (visible && this.ready && this.dirty) this.sendSnapshot();
  }

  /** Sends queued updates now, as one numbered message. */
  flush(): void {
    if (this.timer !== undefined) (this.deps.clearTimer ?? clearTimeout)(this.timer as ReturnType<typeof setTimeout>);
    this.timer = undefined;
    if (!this.queue.length || this.disposed) return;
    const ops = coalesceOps(this.queue);
    this.queue = [];
    this.post({ type: 'update', seq: ++this.seq, ops });
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer !== undefined) (this.deps.clearTimer ?? clearTimeout)(this.timer as ReturnType<typeof setTimeout>);
    this.timer = undefined;
  }

  private sendSnapshot(): void {
    if (this.timer !== undefined) (this.deps.clearTimer ?? clearTimeout)(this.timer as ReturnType<typeof setTimeout>);
    this.timer = undefined;
    this.queue = [];
    this.dirty = false;
    this.seq += 1;
    this.post({ type: 'snapshot', v: PROTOCOL_VERSION, seq: this.seq, state: this.deps.state() });
  }

  private post(msg: HostMessage): void {
    if (this.disposed) return;
    void Promise.resolve(this.deps.post(msg)).catch((err: unknown) =>
      this.deps.log.warn('dashboard', `post failed: ${String(err)}`),
    );
  }
}
