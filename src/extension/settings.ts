import * as vscode from 'vscode';
import type { RalphConfig } from '../core/model/config';
import { DEFAULT_READ_LIMITS_MB, type ReadLimitsMb } from '../core/trust/readLimitsTrust';

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
    if (key === 'readLimits') {
      const v = settingsReadLimits(i?.globalValue, i?.workspaceFolderValue ?? i?.workspaceValue);
      if (v) out[key] = v;
      continue;
    }
    const v = i?.workspaceFolderValue ?? i?.workspaceValue ?? i?.globalValue;
    if (v !== undefined) out[key] = v;
  }
  return out as Partial<RalphConfig>;
}

/**
 * `ralph.readLimits` from the user's settings (`user`, theirs to raise) and the workspace's (`workspace`,
 * .vscode/settings.json: a repository's, so it may only lower a bound, as `.ralph/config.json`'s may unless trusted).
 * Undefined when neither is set. Pure.
 */
export function settingsReadLimits(user: unknown, workspace: unknown): ReadLimitsMb | undefined {
  const u = (user ?? undefined) as ReadLimitsMb | undefined;
  const w = (workspace ?? undefined) as ReadLimitsMb | undefined;
  if (u === undefined && w === undefined) return undefined;
  const out: ReadLimitsMb = { ...u };
  for (const key of ['jsonMb', 'textMb'] as const) {
    const v = w?.[key];
    if (typeof v === 'number' && v > 0) out[key] = Math.min(v, u?.[key] ?? DEFAULT_READ_LIMITS_MB[key]);
  }
  return out;
}
