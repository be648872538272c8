import * as path from 'node:path';
import { fileHash, WORKSPACE_FILE } from './gateFileContent';
import type { TrustedEntry } from './trustedContent';

/**
 * The agents' own project configuration that names programs to run. Claude Code reads `.claude/settings.json` and `.claude/settings.local.json` (hooks such as
 * SessionStart/UserPromptSubmit, `apiKeyHelper`, `statusLine`, `env` such as NODE_OPTIONS, plugins,
 * `enableAllProjectMcpServers`) and `.mcp.json` (MCP server commands); cursor-agent reads `.cursor/mcp.json` and
 * `.cursor/hooks.json`. In `-p` mode Claude Code skips its own folder-trust dialog, so a cloned repository's files
 * would run programs under `ralph run` unasked. Each file is covered whole (its sha256), not key by key: the keys
 * that run programs grow with every release, and a hash of the whole file cannot miss the next one.
 */
export const AGENT_CONFIG_FILES: readonly string[] = [
  '.claude/settings.json',
  '.claude/settings.local.json',
  '.mcp.json',
  '.cursor/mcp.json',
  '.cursor/hooks.json',
];

/** The files Claude Code reads that `--setting-sources user --strict-mcp-config` keeps it from reading. */
export const CLAUDE_PROJECT_FILES: readonly string[] = [
  '.claude/settings.json',
  '.claude/settings.local.json',
  '.mcp.json',
];

/**
 * One `workspace file <path> sha256:…` entry per {@link AGENT_CONFIG_FILES} file present in `folder` (an absent file
 * gives no entry, so a repository without them stays friction-free). Never throws: an unreadable file reads as
 * `unreadable: <code>`, which is content too.
 */
export async function agentConfigEntries(folder: string): Promise<TrustedEntry[]> {
  const out: TrustedEntry[] = [];
  for (const rel of AGENT_CONFIG_FILES) {
    const value = await fileHash(path.join(folder, rel));
    if (value !== 'missing') out.push({ file: WORKSPACE_FILE, key: rel, value });
  }
  return out;
}

/**
 * Whether Claude Code may read the project's settings for this agent start: only when its files are exactly as they
 * were when the run started (the content `ralph run` checked against the user's trust). Pure; table-tested.
 * `atStart`/`now` are {@link agentConfigEntries} results. Returns the changed paths (empty → load them).
 */
export function changedClaudeProjectFiles(atStart: readonly TrustedEntry[], now: readonly TrustedEntry[]): string[] {
  const value = (list: readonly TrustedEntry[], key: string) => list.find((e) => e.key === key)?.value ?? 'missing';
  return CLAUDE_PROJECT_FILES.filter((k) => value(atStart, k) !== value(now, k));
}
