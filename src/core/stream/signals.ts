/**
 * Completion and stuck signals the agent writes in its own text. The tags of every seed system are
 * recognised (seed-systems.md §6 "Completion tags differ per system", §3.5 parser signals, §4.4):
 * `<promise>COMPLETE|ALL_TASKS_DONE|FAIL|RETRY</promise>` (flow-next, ralph-wiggum),
 * `<ralph>COMPLETE</ralph>` / `<ralph>GUTTER[ reason=…|: …]</ralph>` (ralph-wiggum),
 * `<quantum>COMPLETE|BLOCKED|STORY_PASSED|STORY_FAILED</quantum>` (quantum-loop), `<verdict>…</verdict>` (flow-next).
 * Only assistant text is searched, never tool results (a file that quotes a tag must not end the loop).
 */

export type SignalKind = 'complete' | 'stuck' | 'fail' | 'retry' | 'storyPassed' | 'storyFailed' | 'verdict';

export interface AgentSignal {
  kind: SignalKind;
  /** The tag family: `promise`, `ralph`, `quantum`, `verdict`. */
  system: string;
  /** The tag's value as written (`COMPLETE`, `GUTTER`, `SHIP`, …). */
  value: string;
  /** The reason given with a GUTTER signal, at most 200 characters (seed-systems.md §3.5). */
  reason?: string;
}

const TAG = /<(promise|ralph|quantum|verdict)>\s*([\s\S]{0,400}?)\s*<\/\1>/gi;

function classifyTag(system: string, body: string): AgentSignal | null {
  const value = body.trim();
  const upper = value.toUpperCase();
  switch (system) {
    case 'promise':
      if (upper === 'COMPLETE' || upper === 'ALL_TASKS_DONE') return { kind: 'complete', system, value };
      if (upper === 'FAIL') return { kind: 'fail', system, value };
      if (upper === 'RETRY') return { kind: 'retry', system, value };
      return null;
    case 'ralph': {
      if (upper === 'COMPLETE') return { kind: 'complete', system, value };
      const g = /^GUTTER\b\s*(?:reason=|:)?\s*([\s\S]*)$/i.exec(value);
      if (g) {
        const reason = g[1]!.trim().slice(0, 200);
        return reason ? { kind: 'stuck', system, value: 'GUTTER', reason } : { kind: 'stuck', system, value: 'GUTTER' };
      }
      return null;
    }
    case 'quantum':
      if (upper === 'COMPLETE') return { kind: 'complete', system, value };
      if (upper === 'BLOCKED') return { kind: 'stuck', system, value };
      if (upper === 'STORY_PASSED') return { kind: 'storyPassed', system, value };
      if (upper === 'STORY_FAILED') return { kind: 'storyFailed', system, value };
      return null;
    case 'verdict':
      return value ? { kind: 'verdict', system, value } : null;
    default:
      return null;
  }
}

/** Every signal in `text`, in order of appearance. */
export function findSignals(text: string): AgentSignal[] {
  if (!text.includes('<')) return [];
  const out: AgentSignal[] = [];
  for (const m of text.matchAll(TAG)) {
    const s = classifyTag(m[1]!.toLowerCase(), m[2]!);
    if (s) out.push(s);
  }
  return out;
}
