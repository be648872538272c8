/**
 * Redaction of `agentArgs` values (possibly secrets: `--api-key sk-…`, `--header=Authorization: …`) from what is
 * written about a run: `.ralph/activity.log`, `.ralph/runs/<id>/events.jsonl`, `ralph run --json` and the VS Code log.
 * Pure; every writer of those lines calls {@link redactEvent} with the run's `agentArgs`.
 *
 * Rule: an option name (`--verbose`, `-v`: a dash, then a letter, then letters, digits, `-` or `_`) is kept so a
 * person can read the command; every other argument is a value and is replaced by {@link REDACTED}; `--name=value`
 * keeps `--name=`. In the agent's command line (the `agentStarted` event) the arguments are redacted where they
 * stand, whatever their length; elsewhere (any string of any event: an error message that echoes the command) values
 * of at least {@link MIN_SECRET_LENGTH} characters are replaced wherever they occur, shorter ones (`5`, `opus`) are
 * left, since replacing them everywhere would garble unrelated text and they are not secrets.
 */

/** What a redacted value is replaced with. */
export const REDACTED = '«redacted»';

/** Shortest value replaced outside the agent's command line. */
export const MIN_SECRET_LENGTH = 6;

const OPTION_NAME = /^--?[A-Za-z][A-Za-z0-9_-]*$/;
const OPTION_WITH_VALUE = /^(--?[A-Za-z][A-Za-z0-9_-]*=)([\s\S]+)$/;

/** One argument redacted: an option name is kept, `--name=value` keeps `--name=`, anything else is {@link REDACTED}. */
export function redactArg(arg: string): string {
  if (OPTION_NAME.test(arg)) return arg;
  const m = OPTION_WITH_VALUE.exec(arg);
  if (m) return `${m[1]}${REDACTED}`;
  return arg === '' ? arg : REDACTED;
}

/** The values of `agentArgs` (what {@link redactArg} hides), longest first. */
export function secretValues(agentArgs: readonly string[]): string[] {
  const out = new Set<string>();
  for (const a of agentArgs) {
    if (OPTION_NAME.test(a) || a === '') continue;
    const m = OPTION_WITH_VALUE.exec(a);
    out.add(m ? m[2]! : a);
  }
  return [...out].sort((a, b) => b.length - a.length);
}

/**
 * `text` with the agent's arguments redacted: first the arguments as they stand in a command line (`agentArgs`
 * joined by single spaces, as the engine prints the command), then every value of {@link MIN_SECRET_LENGTH}+
 * characters anywhere. Returns `text` unchanged when `agentArgs` is empty.
 */
export function redactText(text: string, agentArgs: readonly string[]): string {
  if (!agentArgs.length || !text) return text;
  let out = text;
  const joined = agentArgs.join(' ');
  if (joined && out.includes(joined)) out = out.split(joined).join(agentArgs.map(redactArg).join(' '));
  for (const s of secretValues(agentArgs)) {
    if (s.length >= MIN_SECRET_LENGTH && out.includes(s)) out = out.split(s).join(REDACTED);
  }
  return out;
}

/**
 * A copy of `event` whose every string (at any depth) is {@link redactText}-ed; the same object when `agentArgs` is
 * empty. Keys are not touched.
 */
export function redactEvent<T>(event: T, agentArgs: readonly string[]): T {
  if (!agentArgs.length) return event;
  return redactValue(event, agentArgs) as T;
}

function redactValue(v: unknown, agentArgs: readonly string[]): unknown {
  if (typeof v === 'string') return redactText(v, agentArgs);
  if (Array.isArray(v)) return v.map((x) => redactValue(x, agentArgs));
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, redactValue(x, agentArgs)]),
    );
  }
  return v;
}
