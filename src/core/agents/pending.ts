import { ev, rawTypeOf } from '../stream/events';
import type { AgentAdapter } from './adapter';

/**
 * An agent the configuration may name but this build cannot drive yet: it has its name, its path key and its binary
 * (so `ralph doctor` finds it), recognises no stream, and refuses to start (registry.ts `getAdapter` throws
 * {@link pendingReason}).
 */
export function pendingAdapter(name: string, configKey: string, defaultBinary: string): AgentAdapter {
  return {
    name,
    defaultBinary,
    configKey,
    guardHook: false,
    estimatesContext: true,
    invocation() {
      throw new Error(pendingReason(name));
    },
    createMapper: () => ({ map: (line) => [ev({ type: 'unknown', rawType: rawTypeOf(line), raw: line })] }),
    recognise: () => 0,
  };
}

/** Why a pending agent cannot run. */
export const pendingReason = (name: string): string => `the ${name} agent is not yet supported by this build of ralph`;
