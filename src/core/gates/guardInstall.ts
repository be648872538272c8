import { parse, printParseErrorCode, type ParseError } from 'jsonc-parser';
import { FileProblemError, positionAt } from '../store/parseError';
import { applyJsonChanges, newJsonText } from '../store/jsonEdit';

/**
 * `ralph guard install [--uninstall]`: our PreToolUse hook in a project's `.claude/settings.json`, for
 * people who run claude themselves. Idempotent; every other key and hook of the file is kept (edits through
 * jsonc-parser keep the file's formatting); `--uninstall` removes only our entry. Our entry is the hook whose
 * command runs `guard-hook.js` (with its matcher group when the group holds nothing else). Pure: text in, text out.
 */

/** The marker that identifies our hook command. */
export const GUARD_HOOK_MARKER = 'guard-hook.js';

interface MatcherGroup {
  matcher?: string;
  hooks?: { type?: string; command?: string }[];
}

type HookEntry = NonNullable<MatcherGroup['hooks']>[number];
const isOurHook = (h: HookEntry) => typeof h?.command === 'string' && h.command.includes(GUARD_HOOK_MARKER);

/**
 * The user's part of a matcher group: the group without our hook entries; undefined when nothing of the user's is
 * left (the group held only ours). A hook the user added to the same group as ours is kept.
 */
function withoutOurs(g: MatcherGroup): MatcherGroup | undefined {
  if (!Array.isArray(g?.hooks) || !g.hooks.some(isOurHook)) return g;
  const rest = g.hooks.filter((h) => !isOurHook(h));
  return rest.length ? { ...g, hooks: rest } : undefined;
}

/**
 * The new text of the settings file (`text` undefined: no file yet), or `undefined` when nothing changes.
 * Throws {@link FileProblemError} (file:line:column) when the file does not parse or `hooks.PreToolUse` is not a list.
 */
export function editGuardSettings(
  file: string,
  text: string | undefined,
  group: MatcherGroup,
  uninstall: boolean,
): string | undefined {
  if (text === undefined || text.trim() === '') {
    if (uninstall) return undefined;
    return newJsonText({ hooks: { PreToolUse: [group] } });
  }
  const errors: ParseError[] = [];
  const doc = parse(text, errors, { allowTrailingComma: true }) as Record<string, unknown> | undefined;
  if (errors.length) {
    const pos = positionAt(text, errors[0]!.offset);
    throw new FileProblemError({
      file,
      line: pos.line,
      column: pos.column,
      message: `not valid JSON (${printParseErrorCode(errors[0]!.error)}); the file was left as it is`,
    });
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc))
    throw new FileProblemError({
      file,
      line: 1,
      column: 1,
      message: 'settings must be a JSON object; the file was left as it is',
    });
  const hooks = doc.hooks as Record<string, unknown> | undefined;
  const pre = hooks?.PreToolUse;
  if (pre !== undefined && !Array.isArray(pre))
    throw new FileProblemError({
      file,
      line: 1,
      column: 1,
      message: 'hooks.PreToolUse is not a list; the file was left as it is',
    });
  const groups = (pre ?? []) as MatcherGroup[];
  const others = groups.map(withoutOurs).filter((g): g is MatcherGroup => g !== undefined);
  const next = uninstall ? others : [...others, group];
  if (JSON.stringify(next) === JSON.stringify(groups)) return undefined;
  if (uninstall && next.length === 0) {
    const rest = Object.keys(hooks ?? {}).filter((k) => k !== 'PreToolUse');
    return applyJsonChanges(text, [{ op: 'delete', path: rest.length ? ['hooks', 'PreToolUse'] : ['hooks'] }]);
  }
  return applyJsonChanges(text, [{ op: 'set', path: ['hooks', 'PreToolUse'], value: next }]);
}
