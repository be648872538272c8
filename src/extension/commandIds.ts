/**
 * Every command the extension registers, typed: id → argument tuple and result. The manifest's
 * `contributes.commands`, this table and the registered commands must agree (unit and integration tests).
 * Pattern: microsoft/vscode-js-debug `src/common/contributionUtils.ts`.
 */
export const CommandIds = {
  doctor: 'ralph.doctor',
  refresh: 'ralph.refresh',
} as const;

export type CommandId = (typeof CommandIds)[keyof typeof CommandIds];

/** Arguments and result of each command, for typed registration and execution. */
export interface CommandTypes {
  'ralph.doctor': { args: []; result: string };
  'ralph.refresh': { args: []; result: void };
}

/** Compile-time check: an id without types (or types without an id) fails `tsc`. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _idsMatchTypes: Same<CommandId, keyof CommandTypes> = true;
void _idsMatchTypes;

export const allCommandIds: readonly CommandId[] = Object.values(CommandIds);
