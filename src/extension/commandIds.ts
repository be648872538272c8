import type { PlanNode } from './planTree';
import type { NewPlanArgs, NewPlanResult } from './newPlan';
import type { StartArgs } from './runController';

/**
 * Every command the extension registers, typed: id → argument tuple and result. The manifest's
 * `contributes.commands`, this table and the registered commands must agree (unit and integration tests).
 * Pattern: microsoft/vscode-js-debug `src/common/contributionUtils.ts`.
 */
export const CommandIds = {
  start: 'ralph.start',
  chooseAgent: 'ralph.chooseAgent',
  pause: 'ralph.pause',
  resume: 'ralph.resume',
  stop: 'ralph.stop',
  cancel: 'ralph.cancel',
  status: 'ralph.status',
  reset: 'ralph.reset',
  doctor: 'ralph.doctor',
  refresh: 'ralph.refresh',
  openDashboard: 'ralph.openDashboard',
  revealInDashboard: 'ralph.revealInDashboard',
  openLog: 'ralph.openLog',
  answer: 'ralph.answer',
  newPlan: 'ralph.newPlan',
  treeResetTask: 'ralph.tree.resetTask',
  treeResetCascade: 'ralph.tree.resetTaskAndDependents',
  treeOpenFile: 'ralph.tree.openTaskFile',
  treeAnswer: 'ralph.tree.answerQuestion',
  treeStartHere: 'ralph.tree.startHere',
  treeOpenBrief: 'ralph.tree.openResumeBrief',
  treeResume: 'ralph.tree.resumeWithRalph',
} as const;

export type CommandId = (typeof CommandIds)[keyof typeof CommandIds];

/** Arguments of **Ralph: Reset** when called programmatically; the UI asks otherwise. */
export interface ResetArgs {
  folder?: string;
  id?: string;
  cascade?: boolean;
}

/**
 * Arguments of **Ralph: Answer Question…** when called programmatically (the notification's **Answer…**, tests); without
 * `text` an input box asks, without a run a quick pick offers the waiting questions.
 */
export interface AnswerArgs {
  folder?: string;
  runId?: string;
  itemId?: string;
  text?: string;
}

/** Arguments and result of each command, for typed registration and execution. */
export interface CommandTypes {
  'ralph.start': { args: [StartArgs?]; result: string | undefined };
  /** The folder (default the only one, else a pick); resolves with the agent remembered for it. */
  'ralph.chooseAgent': { args: [string?]; result: string | undefined };
  'ralph.pause': { args: [string?]; result: string | undefined };
  'ralph.resume': { args: [string?]; result: string | undefined };
  'ralph.stop': { args: [string?]; result: string | undefined };
  'ralph.cancel': { args: [string?]; result: boolean };
  'ralph.status': { args: []; result: string };
  'ralph.reset': { args: [ResetArgs?]; result: string[] | undefined };
  'ralph.doctor': { args: []; result: string };
  'ralph.refresh': { args: []; result: void };
  'ralph.openDashboard': { args: []; result: void };
  /** A tree node or `{ runId?, itemId? }` (see dashboard/revealTarget.ts). */
  'ralph.revealInDashboard': { args: [unknown?]; result: void };
  'ralph.openLog': { args: [string?]; result: boolean };
  'ralph.answer': { args: [AnswerArgs?]; result: string | undefined };
  /** Without arguments: quick pick (kind) and input boxes (title, gate); see newPlan.ts. */
  'ralph.newPlan': { args: [NewPlanArgs?]; result: NewPlanResult | undefined };
  /** Tree-only (hidden from the palette): the clicked node. */
  'ralph.tree.resetTask': { args: [PlanNode?]; result: string[] | undefined };
  'ralph.tree.resetTaskAndDependents': { args: [PlanNode?]; result: string[] | undefined };
  'ralph.tree.openTaskFile': { args: [PlanNode?]; result: boolean };
  'ralph.tree.answerQuestion': { args: [PlanNode?]; result: string | undefined };
  'ralph.tree.startHere': { args: [PlanNode?]; result: string | undefined };
  'ralph.tree.openResumeBrief': { args: [PlanNode?]; result: string | undefined };
  'ralph.tree.resumeWithRalph': { args: [PlanNode?]; result: string | undefined };
}

/** Compile-time check: an id without types (or types without an id) fails `tsc`. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _idsMatchTypes: Same<CommandId, keyof CommandTypes> = true;
void _idsMatchTypes;

export const allCommandIds: readonly CommandId[] = Object.values(CommandIds);
