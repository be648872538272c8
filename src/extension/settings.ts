import * as vscode from 'vscode';
import type { RalphConfig } from '../core/model/config';

/**
 * The `ralph.*` settings the user actually set (any scope) among `keys` (the schema's `configKeys`), as a partial
 * configuration layered over
 * `.ralph/config.json`. Defaults are not taken from VS Code: the schema holds them, so the file wins over an
 * unset setting.
 */
export function readSettingsLayer(keys: readonly (keyof RalphConfig)[], folder?: vscode.Uri): Partial<RalphConfig> {
  const cfg = vscode.workspace.getConfiguration('ralph', folder);
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const i = cfg.inspect(key);
    const v = i?.workspaceFolderValue ?? i?.workspaceValue ?? i?.globalValue;
    if (v !== undefined) out[key] = v;
  }
  return out as Partial<RalphConfig>;
}
