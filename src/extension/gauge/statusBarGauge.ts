import * as vscode from 'vscode';
import { Disposable } from '../lifecycle';
import type { RunStore } from '../runStore';
import { Throttle, systemClock, type ThrottleClock } from '../throttle';
import { presentGauge } from './gaugeText';

/** Id of the status bar item (users hide it by this id's name, "Ralph Tokens"). */
export const GAUGE_ITEM_ID = 'ralph.tokens';
/** The dashboard's command: what a click on the gauge opens (the README and the demo promise it). */
export const DASHBOARD_COMMAND = 'ralph.openDashboard';

/**
 * The status bar token gauge: one item (id `ralph.tokens`, name "Ralph Tokens", left side) showing the run the store
 * picks (the active one, else the latest), built by the pure {@link presentGauge}. Shown while any run (or a Start)
 * is known, hidden otherwise. At most 4 updates a second (a {@link Throttle} of 250 ms, first update at once). A click
 * opens the dashboard, during a run and after it. The command is fixed, never looked up: a lookup made during
 * activation runs before the extension has registered its own commands, and would pick a fallback for good. Never
 * polls: it follows the store's events.
 */
export class StatusBarGauge extends Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly throttle: Throttle;
  /** How many times the item was rendered (the bench counts updates per second). */
  renders = 0;

  constructor(
    private readonly store: RunStore,
    opts: { clock?: ThrottleClock } = {},
  ) {
    super();
    this.item = this._register(vscode.window.createStatusBarItem(GAUGE_ITEM_ID, vscode.StatusBarAlignment.Left, 10));
    this.item.name = 'Ralph Tokens';
    this.throttle = this._register(new Throttle(() => this.render(), 250, opts.clock ?? systemClock));
    this._register(store.onDidChange(() => this.throttle.request()));
    this.item.command = { title: 'Open Dashboard', command: DASHBOARD_COMMAND };
    this.render();
  }

  /** The item (tests read its text, colour and tooltip). */
  get statusBarItem(): vscode.StatusBarItem {
    return this.item;
  }

  private render(): void {
    if (this.isDisposed) return;
    this.renders++;
    const snap = this.store.snapshot();
    const run = this.store.gaugeRun();
    const starting = snap.folders.find((f) => f.starting);
    if (!run && !starting) {
      this.item.hide();
      return;
    }
    const multiRoot = snap.folders.length > 1;
    if (starting && (!run || !run.facts.active)) {
      this.item.text = '$(sync~spin) Ralph · starting';
      this.item.tooltip = new vscode.MarkdownString(
        `**Ralph** is starting a run${multiRoot ? ` in ${starting.name}` : ''}…`,
      );
      this.item.backgroundColor = undefined;
      this.item.accessibilityInformation = { label: 'Ralph run starting', role: 'button' };
    } else if (run) {
      const p = presentGauge(run.gauge, { multiRoot });
      this.item.text = p.text;
      const md = new vscode.MarkdownString(p.tooltip);
      md.supportThemeIcons = true;
      this.item.tooltip = md;
      this.item.backgroundColor = p.background
        ? new vscode.ThemeColor(
            p.background === 'error' ? 'statusBarItem.errorBackground' : 'statusBarItem.warningBackground',
          )
        : undefined;
      this.item.accessibilityInformation = { label: p.ariaLabel, role: 'button' };
    }
    this.item.show();
  }
}
