import { readFileSync, realpathSync } from 'node:fs';
import * as path from 'node:path';
import { trustRecordPath } from './trustRecordPath';

/** `readLimits` of the configuration, MB per format (model/config.ts). */
export interface ReadLimitsMb {
  jsonMb?: number;
  textMb?: number;
}

/** The defaults of the read limits, MB (store/readJsonFile.ts `DEFAULT_READ_LIMITS`). */
export const DEFAULT_READ_LIMITS_MB: Readonly<Required<ReadLimitsMb>> = Object.freeze({ jsonMb: 64, textMb: 16 });

/** The trust-record line of one raised limit (trustedContent.ts `contentLines` writes the same). */
export function readLimitLine(key: keyof ReadLimitsMb, mb: number): string {
  return `.ralph/config.json readLimits.${key} = ${JSON.stringify(mb)}`;
}

/**
 * The fields of `limits` that raise a bound above its default, or undefined when none does. Only these are trusted
 * content (trustedContent.ts): lowering a bound is always allowed, raising it switches off a protection. Pure.
 */
export function raisedReadLimits(limits: unknown): ReadLimitsMb | undefined {
  if (limits === null || typeof limits !== 'object' || Array.isArray(limits)) return undefined;
  const out: ReadLimitsMb = {};
  for (const key of ['jsonMb', 'textMb'] as const) {
    const v = (limits as Record<string, unknown>)[key];
    if (typeof v === 'number' && v > DEFAULT_READ_LIMITS_MB[key]) out[key] = v;
  }
  return Object.keys(out).length ? out : undefined;
}

/**
 * The read limits a workspace's `readLimits` may set. A value at or below its default holds; a raise holds only
 * when the user trusted it (its line is in `trustedLines`, the trust record of the folder: `ralph trust`, VS Code's
 * Trust answer) or trusted this command (`override`: `--trust`, `RALPH_TRUST=1`); else the default holds. So a
 * cloned repository cannot switch off bounded input by writing `"jsonMb": 100000`. Pure; table-tested.
 */
export function boundedReadLimits(
  limits: ReadLimitsMb | undefined,
  trustedLines: readonly string[] | null,
  override = false,
): ReadLimitsMb {
  const out: ReadLimitsMb = {};
  for (const key of ['jsonMb', 'textMb'] as const) {
    const v = limits?.[key];
    if (v === undefined || !(v > 0)) continue;
    if (v <= DEFAULT_READ_LIMITS_MB[key] || override || trustedLines?.includes(readLimitLine(key, v))) out[key] = v;
  }
  return out;
}

/**
 * The lines of `folder`'s trust record (trustStore.ts), read synchronously without zod (every command sets its read
 * limits first), or null when there is none or it is not a record of this folder.
 */
export function trustedLinesSync(folder: string, env: NodeJS.ProcessEnv = process.env): string[] | null {
  let key: string;
  try {
    key = realpathSync(folder);
  } catch {
    key = path.resolve(folder);
  }
  try {
    const r = JSON.parse(readFileSync(trustRecordPath(key, env), 'utf8')) as { folder?: unknown; lines?: unknown };
    if (r.folder !== key || !Array.isArray(r.lines) || !r.lines.every((l) => typeof l === 'string')) return null;
    return r.lines as string[];
  } catch {
    return null;
  }
}

/** {@link boundedReadLimits} for `folder`: its trust record is read only when a limit is raised. */
export function workspaceReadLimits(
  folder: string,
  limits: ReadLimitsMb | undefined,
  env: NodeJS.ProcessEnv = process.env,
): ReadLimitsMb {
  if (!raisedReadLimits(limits)) return boundedReadLimits(limits, null);
  return boundedReadLimits(limits, trustedLinesSync(folder, env), env.RALPH_TRUST === '1');
}
