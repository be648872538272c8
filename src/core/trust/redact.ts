/**
 * Redaction of `agentArgs` values and of the agents' keys in the environment ({@link environmentSecrets}) (possibly secrets: `--api-key sk-…`, `--header=Authorization: …`) from what is
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
 * The key variables of each agent CLI (their documentation: `claude --help`, `codex` config `env_key`, `gemini` auth,
 * opencode providers, Qwen Code auth.md, `copilot help environment`, cursor-agent): the values ralph passes through
 * unchanged to the agent and must never write into a log or record. Any other variable whose name ends like a key
 * ({@link KEY_NAME}) counts too: a custom provider's `env_key` can be any name.
 */
export const AGENT_KEY_VARIABLES: Readonly<Record<string, readonly string[]>> = {
  claude: ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'CLAUDE_CODE_OAUTH_TOKEN', 'AWS_BEARER_TOKEN_BEDROCK'],
  codex: ['OPENAI_API_KEY', 'CODEX_API_KEY', 'AZURE_OPENAI_API_KEY'],
  gemini: ['GEMINI_API_KEY', 'GOOGLE_API_KEY', 'GOOGLE_CLOUD_ACCESS_TOKEN'],
  opencode: ['OPENCODE_CONFIG_CONTENT', 'OPENCODE_SERVER_PASSWORD', 'OPENROUTER_API_KEY', 'ANTHROPIC_API_KEY'],
  qwen: ['OPENAI_API_KEY', 'DASHSCOPE_API_KEY', 'QWEN_API_KEY'],
  copilot: [
    'COPILOT_PROVIDER_API_KEY',
    'COPILOT_PROVIDER_BEARER_TOKEN',
    'COPILOT_GITHUB_TOKEN',
    'GH_TOKEN',
    'GITHUB_TOKEN',
  ],
  'cursor-agent': ['CURSOR_API_KEY'],
};

/** A variable name that says it holds a key: `…_API_KEY`, `…_TOKEN`, `…_SECRET`, `…_PASSWORD`, any case. */
const KEY_NAME = /(?:^|_)(?:API_?KEY|[A-Z]*TOKEN|SECRET(?:_KEY)?|PASSWORD)$/i;

/** Key-like values inside a JSON config held in a variable (`OPENCODE_CONFIG_CONTENT`: `"apiKey": "…"`). */
const JSON_KEY_VALUE = /"(?:apiKey|api_key|token|bearerToken|password)"\s*:\s*"([^"]+)"/gi;

/**
 * The secrets of an agent's environment: the values of every variable of {@link AGENT_KEY_VARIABLES} or with a
 * key-like name, and the key values inside `OPENCODE_CONFIG_CONTENT`, of at least {@link MIN_SECRET_LENGTH}
 * characters, longest first. Pure.
 */
export function environmentSecrets(env: Readonly<Record<string, string | undefined>>): string[] {
  const named = new Set(Object.values(AGENT_KEY_VARIABLES).flat());
  const out = new Set<string>();
  for (const [k, v] of Object.entries(env)) {
    if (!v || (!named.has(k) && !KEY_NAME.test(k))) continue;
    if (k === 'OPENCODE_CONFIG_CONTENT') {
      for (const m of v.matchAll(JSON_KEY_VALUE)) if (m[1]!.length >= MIN_SECRET_LENGTH) out.add(m[1]!);
      continue;
    }
    if (v.length >= MIN_SECRET_LENGTH) out.add(v);
  }
  return [...out].sort((a, b) => b.length - a.length);
}

/**
 * `text` with the agent's arguments and `secrets` redacted: first the arguments as they stand in a command line
 * (`agentArgs` joined by single spaces, as the engine prints the command), then every argument value and every
 * secret of {@link MIN_SECRET_LENGTH}+ characters anywhere. Returns `text` unchanged when both are empty.
 */
export function redactText(text: string, agentArgs: readonly string[], secrets: readonly string[] = []): string {
  if ((!agentArgs.length && !secrets.length) || !text) return text;
  let out = text;
  const joined = agentArgs.join(' ');
  if (joined && out.includes(joined)) out = out.split(joined).join(agentArgs.map(redactArg).join(' '));
  for (const s of [...secretValues(agentArgs), ...secrets]) {
    if (s.length >= MIN_SECRET_LENGTH && out.includes(s)) out = out.split(s).join(REDACTED);
  }
  return out;
}

/**
 * A copy of `event` whose every string (at any depth) is {@link redactText}-ed; the same object when `agentArgs` and
 * `secrets` ({@link environmentSecrets}) are empty. Keys are not touched.
 */
export function redactEvent<T>(event: T, agentArgs: readonly string[], secrets: readonly string[] = []): T {
  if (!agentArgs.length && !secrets.length) return event;
  return redactValue(event, agentArgs, secrets) as T;
}

function redactValue(v: unknown, agentArgs: readonly string[], secrets: readonly string[]): unknown {
  if (typeof v === 'string') return redactText(v, agentArgs, secrets);
  if (Array.isArray(v)) return v.map((x) => redactValue(x, agentArgs, secrets));
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(
      Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, redactValue(x, agentArgs, secrets)]),
    );
  }
  return v;
}
