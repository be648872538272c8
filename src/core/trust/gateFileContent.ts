import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { gateFileRefs, MAX_GATE_DEPTH, RC_VIA, userRcFiles, type GateFileRef } from './gateFiles';
import { diffLines, type TrustedEntry } from './trustedContent';

/**
 * The shell around {@link gateFileRefs}: reads and hashes the workspace files that trusted gate commands run, as
 * entries of the trusted content (`workspace file <path> sha256:…`, `workspace file package.json scripts.test = "…"`).
 * Used by `readTrustedContent` (so `ralph run`, `ralph doctor`, `ralph trust` and the VS Code modal all see them) and
 * by the engine, which checks them again before every gate run (a file changed during the run → the gate is not run).
 */

/** What the trusted commands run, for `ralph trust --show` and `ralph doctor`. */
export interface GateCoverage {
  /** Covered files (and package.json scripts), workspace-relative, each with the command word that runs it. */
  covered: { key: string; via: string }[];
  /** What the commands run that is not covered (one readable note each). */
  uncovered: string[];
}

/** The `file` of a workspace-file entry of the trusted content. */
export const WORKSPACE_FILE = 'workspace file' as const;

/**
 * The workspace-file entries of `commands` (shell texts run in `folder`), in the order found, one per file or
 * package.json script; package.json scripts are searched in turn (up to {@link MAX_GATE_DEPTH} levels). Values:
 * `sha256:<hex>` of a file's bytes, `missing`, `not a file`; for a script `= "<text>"` or `= (no such script)`.
 * Never throws for a file it cannot read: that reads as a value (`unreadable: <code>`), so a change still shows.
 */
export async function gateFileEntries(
  folder: string,
  commands: readonly string[],
): Promise<{ entries: TrustedEntry[]; coverage: GateCoverage }> {
  const entries = new Map<string, string>();
  const coverage: GateCoverage = { covered: [], uncovered: [] };
  const queue: { text: string; cwd: string; depth: number }[] = commands
    .filter((c) => c.trim())
    .map((text) => ({ text, cwd: '', depth: 0 }));
  const manifests = new Map<string, Record<string, unknown> | string>();
  while (queue.length) {
    const { text, cwd, depth } = queue.shift()!;
    const found = gateFileRefs(text, { cwd, root: folder, depth });
    for (const note of found.uncovered) if (!coverage.uncovered.includes(note)) coverage.uncovered.push(note);
    for (const ref of found.refs) {
      const r = await entryOf(folder, ref, manifests);
      if (entries.has(r.key)) continue;
      entries.set(r.key, r.value);
      coverage.covered.push({ key: r.key, via: ref.via });
      if (r.script !== undefined) {
        if (depth + 1 > MAX_GATE_DEPTH) coverage.uncovered.push(`${r.key}: nested too deep`);
        else queue.push({ text: r.script, cwd: ref.kind === 'packageScript' ? ref.dir : '', depth: depth + 1 });
      }
    }
  }
  return { entries: [...entries].map(([key, value]) => ({ file: WORKSPACE_FILE, key, value })), coverage };
}

async function entryOf(
  folder: string,
  ref: GateFileRef,
  manifests: Map<string, Record<string, unknown> | string>,
): Promise<{ key: string; value: string; script?: string }> {
  if (ref.kind === 'file') return { key: ref.path, value: await fileHash(path.join(folder, ref.path)) };
  if (ref.kind === 'firstOf') {
    for (const c of ref.candidates) {
      const v = await fileHash(path.join(folder, c));
      if (v !== 'missing') return { key: c, value: v };
    }
    return { key: ref.candidates[ref.candidates.length - 1]!, value: 'missing' };
  }
  const names = [`pre${ref.script}`, ref.script, `post${ref.script}`];
  let scripts = manifests.get(ref.manifest);
  if (scripts === undefined) {
    scripts = await readScripts(path.join(folder, ref.manifest));
    manifests.set(ref.manifest, scripts);
  }
  const key = `${ref.manifest} scripts.${ref.script}`;
  if (typeof scripts === 'string') return { key, value: `(${scripts})` };
  // pre/post run around the script (npm runs them; yarn 1 too): all three are one entry, shown together.
  const parts = names
    .filter((n) => typeof scripts[n] === 'string')
    .map((n) => `${n === ref.script ? '' : `${n}: `}${scripts[n] as string}`);
  if (!parts.length) return { key, value: '= (no such script)' };
  return {
    key,
    value: `= ${JSON.stringify(parts.join(' ; '))}`,
    script: names
      .filter((n) => typeof scripts[n] === 'string')
      .map((n) => scripts[n] as string)
      .join('\n'),
  };
}

async function readScripts(file: string): Promise<Record<string, unknown> | string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT'
      ? 'no package.json'
      : `unreadable: ${(err as NodeJS.ErrnoException).code ?? 'error'}`;
  }
  try {
    const json = JSON.parse(text) as { scripts?: unknown };
    return json.scripts !== null && typeof json.scripts === 'object' && !Array.isArray(json.scripts)
      ? (json.scripts as Record<string, unknown>)
      : {};
  } catch {
    return 'package.json does not parse';
  }
}

/** `sha256:<hex>` of a file's bytes (symlinks followed), `missing`, `not a file`, or `unreadable: <code>`. */
export async function fileHash(file: string): Promise<string> {
  const st = await stat(file).catch((err: NodeJS.ErrnoException) => err);
  if (st instanceof Error)
    return st.code === 'ENOENT' || st.code === 'ENOTDIR' ? 'missing' : `unreadable: ${st.code ?? 'error'}`;
  if (!st.isFile()) return 'not a file';
  const h = createHash('sha256');
  try {
    for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  } catch (err) {
    return `unreadable: ${(err as NodeJS.ErrnoException).code ?? 'error'}`;
  }
  return `sha256:${h.digest('hex')}`;
}

/** One line per entry as {@link contentLines} shows it: `workspace file scripts/check.sh sha256:…`. */
export function workspaceFileLine(e: Pick<TrustedEntry, 'key' | 'value'>): string {
  return `${WORKSPACE_FILE} ${e.key} ${String(e.value)}`;
}

/** The start of a user-file line of {@link snapshotGateFiles}: `user file /home/me/.npmrc sha256:…`. */
export const USER_FILE = 'user file' as const;

/**
 * The gate files of a run, taken when it starts, to check before every gate run (the agent must not
 * weaken a gate by rewriting the file it runs during the run). `changed()` reads them again and returns the
 * difference (`- ` / `+ ` lines as in a trust diff), empty when nothing changed. Besides the workspace files, the
 * user-level rc files of the package managers the gates run (`~/.npmrc` …, gateFiles.ts `USER_PACKAGE_MANAGER_RC`:
 * the attack is `script-shell=/bin/true` in `~/.npmrc`) are fingerprinted as `user file <absolute path> <value>` lines: not trusted content, but a
 * change during the run stops it the same way. `env` / `home`: where those files are (default: this process's).
 */
export async function snapshotGateFiles(
  folder: string,
  commands: readonly string[],
  opts: { env?: NodeJS.ProcessEnv; home?: string } = {},
): Promise<{ lines: string[]; changed: () => Promise<string[]> }> {
  const read = async () => {
    const { entries, coverage } = await gateFileEntries(folder, commands);
    const managers = new Set(
      coverage.covered.filter((c) => c.via.endsWith(RC_VIA)).map((c) => c.via.slice(0, -RC_VIA.length)),
    );
    const user = userRcFiles(managers, opts.env ?? process.env, opts.home ?? os.homedir(), folder);
    const userLines = await Promise.all(user.map(async (f) => `${USER_FILE} ${f} ${await fileHash(f)}`));
    return [...entries.map(workspaceFileLine), ...userLines];
  };
  const lines = await read();
  return { lines, changed: async () => diffLines(lines, await read()) };
}

/**
 * Why a run ends when a file its `tier` gate runs changed since the run started (`diff`: the workspace-file lines
 * of {@link snapshotGateFiles}' `changed()`; the agent rewrote `scripts/check.sh` to `exit 0`): names the changed
 * files and what to do. The engine does not run the gate and decide() ends the run failed with this reason; what
 * was claimed since the last verified state goes back (the engine's end path). The change is not undone: the person
 * decides (`ralph trust` after checking it, or revert it).
 */
export function gateFilesChangedReason(tier: string, diff: readonly string[]): string {
  return `the ${tier} gate was not run: a file the gates run changed during the run (${changedKeys(diff).join(', ')}); check the change, then run \`ralph trust\` (or revert it) and start again`;
}

/** The keys (`scripts/check.sh`, `package.json scripts.test`, a user file's absolute path) of a diff of workspace-file and user-file lines, once each. */
export function changedKeys(diff: readonly string[]): string[] {
  const keys = diff
    .map((l) => l.replace(/^[-+] /, ''))
    .filter((l) => l.startsWith(`${WORKSPACE_FILE} `) || l.startsWith(`${USER_FILE} `))
    .map((l) => {
      const rest = l.slice((l.startsWith(USER_FILE) ? USER_FILE : WORKSPACE_FILE).length + 1);
      const m = /^(.*?) (?:= |\(|sha256:|missing$|not a file$|unreadable: )/.exec(rest);
      return m ? m[1]! : rest;
    });
  return [...new Set(keys)];
}

/**
 * The coverage as lines for `ralph trust --show` and `ralph doctor`: the files the trusted commands run (covered:
 * a change needs trust again, and stops a run before its next gate) and what they run that is not covered.
 */
export function coverageLines(c: GateCoverage, indent = ''): string[] {
  if (!c.covered.length && !c.uncovered.length) return [];
  const out = [`${indent}Files the trusted commands run (covered: a change needs \`ralph trust\` again):`];
  if (!c.covered.length) out.push(`${indent}  none`);
  for (const f of c.covered) out.push(`${indent}  ${f.key}  (${f.via})`);
  if (c.uncovered.length) {
    out.push(`${indent}Not covered (a change there is not noticed; gates run them with your environment):`);
    for (const u of c.uncovered) out.push(`${indent}  ${u}`);
  }
  return out;
}
