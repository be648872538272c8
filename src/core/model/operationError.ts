/**
 * A refused or failed operation (reset of an in-progress task, an unknown id, several active runs…): a value
 * with a machine code and a message a person can act on. The CLI prints `{"success": false, "error": message}`
 * (flowctl's shape, seed-systems.md §2.5) and exits 1.
 */
export class OperationError extends Error {
  constructor(
    readonly code: OperationErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'OperationError';
  }
}

export type OperationErrorCode =
  | 'not_found'
  | 'invalid_id'
  | 'invalid_state'
  | 'closed_epic'
  | 'claimed'
  | 'deps_not_done'
  | 'cycle'
  | 'no_source'
  | 'no_active_run'
  | 'several_active_runs'
  | 'run_not_active'
  | 'run_not_found'
  | 'no_question';
