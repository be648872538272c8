import type { CommandPolicy } from './commandPolicy';

/**
 * The command policy as the standalone guard may use it: a cloned repository is not trusted by default, so its policy
 * must not hand the user's own claude a program (an untrusted `[rewrite]` of `npm test` to `./tools/evil.sh`). Rows
 * that hand the agent a program or a gate's authority — `[rewrite]` (a replacement command), `[wrap]` and the `[gates]`
 * pins (the agent's command run through the gate runner under a gate's label) — are trusted content
 * (core/trust/trustedContent.ts): an untrusted policy's such rows are ignored. `[deny]` and `[protect]` rows only take
 * power away, so they apply whatever the trust state (a cloned repository may always make the guard stricter, never
 * more generous). The policy has no allow rows; a future one belongs with `[rewrite]` here.
 */

/** What {@link policyForTrust} kept and what it ignored. */
export interface TrustedPolicyView {
  /** The policy to decide with: the same object when trusted (or nothing was ignored). */
  policy: CommandPolicy;
  /** One line per ignored section with its row count, e.g. `[rewrite] 2 rows`; empty when nothing was ignored. */
  ignored: string[];
}

/** The sections an untrusted policy loses (each row could make the guard allow or change a call). */
export const UNTRUSTED_IGNORED_SECTIONS = ['gates', 'rewrite', 'wrap'] as const;

/**
 * The policy to use given whether its content is trusted (`allowed`: trusted, nothing to trust, or an override such as
 * `RALPH_TRUST=1`). Pure; table-tested. Trusted → unchanged; untrusted → `[gates]`, `[rewrite]`, `[wrap]` emptied,
 * `[deny]` and `[protect]` kept.
 */
export function policyForTrust(policy: CommandPolicy, allowed: boolean): TrustedPolicyView {
  if (allowed) return { policy, ignored: [] };
  const counts = {
    gates: Object.values(policy.gates).filter((r) => r !== undefined).length,
    rewrite: policy.rewrite.length,
    wrap: policy.wrap.length,
  };
  const ignored = UNTRUSTED_IGNORED_SECTIONS.filter((s) => counts[s] > 0).map(
    (s) => `[${s}] ${counts[s]} row${counts[s] === 1 ? '' : 's'}`,
  );
  if (!ignored.length) return { policy, ignored };
  return { policy: { ...policy, gates: {}, rewrite: [], wrap: [] }, ignored };
}

/** Whether a policy has rows that only trusted content may use (so the guard needs the trust state at all). */
export function policyNeedsTrust(policy: CommandPolicy): boolean {
  return policyForTrust(policy, false).ignored.length > 0;
}

/** The one line the guard prints (stderr, activity log) when it ignored rows of an untrusted policy. */
export function untrustedPolicyNote(ignored: readonly string[]): string {
  return `Ralph guard: .ralph/command-policy is not trusted here, so these rows are ignored: ${ignored.join(', ')} ([deny] and [protect] still apply). Check it, then run \`ralph trust\` (or set RALPH_TRUST=1).`;
}
