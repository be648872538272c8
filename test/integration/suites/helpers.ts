import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { RalphExtensionApi } from '../../../src/extension/extension';

export const EXTENSION_ID = 'ralph-loop.ralph-loop';

/** The activated extension's API (activating it if the workspace did not already). */
export async function ralphApi(): Promise<RalphExtensionApi> {
  const ext = vscode.extensions.getExtension<RalphExtensionApi>(EXTENSION_ID);
  assert.ok(ext, `extension ${EXTENSION_ID} is not installed in this host`);
  return ext.isActive ? ext.exports : ext.activate();
}

/** Labels of the Ralph tree's root nodes, as VS Code would render them. */
export async function rootLabels(api: RalphExtensionApi): Promise<string[]> {
  const roots = await api.plan.getChildren();
  return roots.map((n) => String(api.plan.getTreeItem(n).label));
}

/**
 * How long {@link until} waits before it fails, ms: most of the host's 60 s test timeout, so a slow machine is never
 * what fails a test (the condition is polled, not timed), while a wait that can never end still says what it awaited.
 */
export const UNTIL_MS = 50_000;

/**
 * Resolves once `check()` is true, polling it every `everyMs` (50); `then`, when given, runs before each poll (e.g.
 * accepting the focused quick-pick row until the command has settled). Fails after `ms` ({@link UNTIL_MS}; a test
 * with a longer timeout may pass more) with `what` and `now()` (the state last seen).
 */
export async function until(
  what: string,
  check: () => boolean,
  o: { everyMs?: number; now?: () => string; then?: () => unknown; ms?: number } = {},
): Promise<void> {
  const end = Date.now() + (o.ms ?? UNTIL_MS);
  for (;;) {
    if (check()) return;
    if (Date.now() > end) throw new Error(`still waiting for ${what}${o.now ? ` (now: ${o.now()})` : ''}`);
    await o.then?.();
    await new Promise((r) => setTimeout(r, o.everyMs ?? 50));
  }
}
