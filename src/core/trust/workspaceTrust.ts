import { commandPolicyPath, parseCommandPolicy } from '../gates/commandPolicy';
import { configPath } from '../store/loadConfig';
import { readTextIfExists } from '../store/atomicWrite';
import { FileProblemError, parseJsonText, workspacePath } from '../store/parseError';
import { decideTrust, type TrustOverride, type TrustRecord, type TrustVerdict } from './trustDecision';
import { trustedContent, type TrustedEntry } from './trustedContent';
import { gateFileEntries, type GateCoverage } from './gateFileContent';
import { readTrustRecord, writeTrustRecord } from './trustStore';
import { agentConfigEntries } from './agentConfig';

/**
 * The shell around the trust rule: reads the workspace's files and the user's record, and records trust. Both faces
 * (the CLI's `run`, `doctor`, `trust`; the extension's Start and Doctor) go through here.
 */

/**
 * The trusted content of `folder` as its files hold it now. Throws {@link FileProblemError} (file:line:column) when
 * `.ralph/config.json` is not JSON or a file cannot be read: content that cannot be read cannot be trusted.
 */
export async function readTrustedContent(folder: string): Promise<TrustedEntry[]> {
  return (await readTrustedContentAndCoverage(folder)).content;
}

/**
 * {@link readTrustedContent} and what its commands run that is and is not covered. The content is the fields of
 * `.ralph/config.json` and `.ralph/command-policy` (trustedContent.ts), then one `workspace file` entry per file the
 * trusted commands run (config `gates`, `[gates]`, `notify`; gateFiles.ts): a change to `scripts/check.sh` is a
 * change of the trusted content, exactly like a change of the gate command. Last, the agents' own project configuration
 * that names programs (`.claude/settings.json`, `.mcp.json` …: agentConfig.ts), one entry per file present.
 */
export async function readTrustedContentAndCoverage(
  folder: string,
): Promise<{ content: TrustedEntry[]; coverage: GateCoverage }> {
  const cfgFile = configPath(folder);
  const policyFile = commandPolicyPath(folder);
  const read = async (file: string) => {
    try {
      return await readTextIfExists(file);
    } catch (err) {
      throw new FileProblemError({
        file: workspacePath(folder, file),
        line: 0,
        column: 0,
        message: `cannot read: ${(err as Error).message}`,
      });
    }
  };
  const [cfgText, policyText] = await Promise.all([read(cfgFile), read(policyFile)]);
  let config: unknown;
  if (cfgText !== undefined) {
    const parsed = parseJsonText(workspacePath(folder, cfgFile), cfgText);
    if (!parsed.ok) throw new FileProblemError(parsed.problem);
    config = parsed.value;
  }
  const policy = policyText === undefined ? undefined : parseCommandPolicy(policyText, policyFile).policy;
  const content = trustedContent({ config, policy });
  const [{ entries, coverage }, agentFiles] = await Promise.all([
    gateFileEntries(folder, trustedCommands(content)),
    agentConfigEntries(folder),
  ]);
  const gateKeys = new Set(entries.map((e) => e.key));
  return { content: [...content, ...entries, ...agentFiles.filter((e) => !gateKeys.has(e.key))], coverage };
}

/**
 * The shell texts of the trusted content that run in the workspace: config `gates` (each tier), `notify`, and the
 * policy's `[gates]` rows. (`[rewrite]` replacements and `[wrap]` prefixes are the agent's commands: not searched.)
 */
export function trustedCommands(content: readonly TrustedEntry[]): string[] {
  const out: string[] = [];
  for (const e of content) {
    if (e.file === '.ralph/config.json' && e.key === 'gates' && e.value !== null && typeof e.value === 'object') {
      for (const v of Object.values(e.value as Record<string, unknown>)) if (typeof v === 'string') out.push(v);
    } else if (e.file === '.ralph/config.json' && e.key === 'notify' && typeof e.value === 'string') {
      out.push(e.value);
    } else if (e.file === '.ralph/command-policy' && e.key === 'gates' && Array.isArray(e.value)) {
      for (const row of e.value as string[]) out.push(row.slice(row.indexOf('|') + 1).trim());
    }
  }
  return out;
}

/**
 * The trust verdict of `folder` now (its content, gate files included, against the user's record, with the
 * command's override), and what the trusted commands run that is and is not covered.
 */
export async function checkWorkspaceTrust(
  folder: string,
  override: TrustOverride = null,
  env: NodeJS.ProcessEnv = process.env,
): Promise<TrustVerdict & { coverage: GateCoverage }> {
  const [{ content, coverage }, record] = await Promise.all([
    readTrustedContentAndCoverage(folder),
    readTrustRecord(folder, env),
  ]);
  return { ...decideTrust(content, record, override), coverage };
}

/**
 * Trusts the current content of `folder` (`ralph trust`, the VS Code "Trust" answer). With `expectedHash`, refuses
 * (returns null) when the files changed since the user was shown them, so a person never trusts content they did not
 * see. Returns the verdict before trusting and the record written (null for `nothing`: there is nothing to record).
 */
export async function trustWorkspace(
  folder: string,
  opts: { expectedHash?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ before: TrustVerdict; record: TrustRecord | null } | null> {
  const env = opts.env ?? process.env;
  const before = await checkWorkspaceTrust(folder, null, env);
  if (opts.expectedHash !== undefined && opts.expectedHash !== before.hash) return null;
  if (before.state === 'nothing') return { before, record: null };
  const record = await writeTrustRecord(folder, { hash: before.hash, lines: before.lines }, env);
  return { before, record };
}
