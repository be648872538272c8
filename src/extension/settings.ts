import * as vscode from 'vscode';
import { configKeys, type RalphConfig } from '../core/model/config';

/**
 * The `ralph.*` settings the user actually set (any scope), as a partial configuration layered over
 * `.ralph/config.json`. Defaults are not taken from VS Code: the schema holds them, so the file wins over an
 * unset setting.
 */
export function readSettingsLayer(folder?: vscode.Uri): Partial<RalphConfig> {
  const cfg = vscode.workspace.getConfiguration('ralph', folder);
  const out: Record<string, unknown> = {};
  for (const key of configKeys) {
    const i = cfg.inspect(key);
    const v = i?.workspaceFolderValue ?? i?.workspaceValue ?? i?.globalValue;
    if (v !== undefined) out[key] = v;
  }
  return out as Partial<RalphConfig>;
}
