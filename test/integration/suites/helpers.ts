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
