/**
 * Context thresholds that end an iteration (rotation) and warn before it, in tokens.
 * Defaults are the table of seed-systems.md §3.4 (lockstride ralph-wiggum-plugin v0.23.1), with one deliberate
 * change: the `[1m]` model marker is matched in any letter case (the seed matched lower-case only, so
 * `opus[1M]` silently fell back to the 200K row).
 *
 * | agent / model                         | rotate  | warn                |
 * |---------------------------------------|---------|---------------------|
 * | claude, model contains `[1m]`         | 300 000 | 250 000 (pinned)    |
 * | claude, other                         | 170 000 | 148 750 (7/8)       |
 * | cursor-agent / any other known agent  | 150 000 | 131 250 (7/8)       |
 * | no agent known (adapter absent)       |  80 000 |  70 000             |
 */

export interface Thresholds {
  /** Context tokens at which the agent is told to wrap up (once per iteration). */
  warn: number;
  /** Context tokens at which the iteration is rotated. */
  rotate: number;
  /** Where the numbers came from, for reports: `default:<row>` or `config`. */
  source: string;
}

/** Configuration overrides; 0 or absent means "use the default" (config `warnThresholdTokens`, `rotateThresholdTokens`). */
export interface ThresholdOverrides {
  warnThresholdTokens?: number;
  rotateThresholdTokens?: number;
}

/** True when a model id asks for the 1M-token window: a `[1m]` suffix, any letter case (agent-streams.md §5). */
export function isOneMillionModel(model: string | null | undefined): boolean {
  return typeof model === 'string' && model.toLowerCase().includes('[1m]');
}

/**
 * The context window of a model by its name, tokens, or null when the name says nothing (then the configured
 * `contextWindowTokens`). A `provider/` prefix (opencode's `scripted/fake-model`) is ignored. Sources: the `[1m]`
 * marker (agent-streams.md §5); Google's model cards (every `gemini-*` 2.x and 3.x: 1 048 576); Alibaba Cloud Model
 * Studio (`qwen3-coder-plus`, `qwen3-coder-flash`: 1 000 000; other `qwen3-coder*`: 262 144); OpenAI's model pages
 * (`gpt-5*`: 400 000).
 */
export function modelContextWindow(model: string | null | undefined): number | null {
  if (typeof model !== 'string' || !model) return null;
  if (isOneMillionModel(model)) return 1_000_000;
  const name = model.slice(model.lastIndexOf('/') + 1).toLowerCase();
  if (name.startsWith('gemini-')) return 1_048_576;
  if (/^qwen3-coder-(?:plus|flash)/.test(name)) return 1_000_000;
  if (name.startsWith('qwen3-coder')) return 262_144;
  if (name.startsWith('gpt-5')) return 400_000;
  return null;
}

/** warn = 7/8 of rotate, rounded down (seed-systems.md §3.4). */
export const sevenEighths = (rotate: number): number => Math.floor((rotate * 7) / 8);

/** The seed defaults for an agent and model (see the table above). `agent` null means no adapter is known. */
export function defaultThresholds(agent: string | null, model: string | null | undefined): Thresholds {
  if (agent === null) return { rotate: 80_000, warn: 70_000, source: 'default:fallback' };
  if (agent === 'claude') {
    if (isOneMillionModel(model)) return { rotate: 300_000, warn: 250_000, source: 'default:claude[1m]' };
    return { rotate: 170_000, warn: sevenEighths(170_000), source: 'default:claude' };
  }
  return { rotate: 150_000, warn: sevenEighths(150_000), source: `default:${agent}` };
}

/**
 * Defaults overridden by configuration. A configured rotate without a configured warn warns at 7/8 of it; a
 * configured warn above rotate is clamped to rotate.
 */
export function resolveThresholds(
  agent: string | null,
  model: string | null | undefined,
  o: ThresholdOverrides = {},
): Thresholds {
  const d = defaultThresholds(agent, model);
  const rotate = o.rotateThresholdTokens && o.rotateThresholdTokens > 0 ? o.rotateThresholdTokens : null;
  const warn = o.warnThresholdTokens && o.warnThresholdTokens > 0 ? o.warnThresholdTokens : null;
  if (rotate === null && warn === null) return d;
  const r = rotate ?? d.rotate;
  const w = warn ?? (rotate !== null ? sevenEighths(rotate) : d.warn);
  return { rotate: r, warn: Math.min(w, r), source: 'config' };
}
