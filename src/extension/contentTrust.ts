import * as path from 'node:path';
import { fileProblemOf } from './fileProblems';
import type { Logger } from './logger';
import * as notify from './notify';

/** The button that trusts the content shown (the modal's own Cancel declines). */
export const TRUST_BUTTON = 'Trust and Start';

/**
 * The dialogs of the trust check. The real ones are VS Code's; integration tests replace them (`RunController.trustUi`)
 * because a modal cannot be clicked from a test in the real host.
 */
export interface TrustUi {
  /**
   * A modal warning with `message`, `detail` (shown below it) and one action after a default **Cancel** (Enter
   * declines); resolves true when the action was chosen.
   */
  confirm(message: string, detail: string, action: string): Promise<boolean>;
  /** A non-modal warning. */
  warn(message: string): void;
  /** A non-modal error. */
  error(message: string): void;
}

/** VS Code's own dialogs (the default {@link TrustUi}). */
export const vscodeTrustUi: TrustUi = {
  confirm: (message, detail, action) => notify.confirmCancelFirst(message, detail, action),
  warn: (message) => void notify.showWarningMessage(message),
  error: (message) => void notify.showErrorMessage(message),
};

/**
 * Before **Ralph: Start** uses a folder's configuration: Workspace Trust has already decided that anything
 * may run at all; here the same content hash as `ralph trust` is checked (core/trust), and content that is new or
 * changed since it was trusted is shown in a modal (what it runs, or what changed) with Cancel (the default) / **Trust and Start**.
 * Trusting records the hash in the same place as `ralph trust`, so the CLI then trusts it too. `RALPH_TRUST=1` in the
 * extension host's environment trusts for one start without asking (CI, tests). Resolves true when the run may
 * use the content. `ui`: the dialogs (default VS Code's).
 */
export async function ensureContentTrusted(folder: string, log: Logger, ui: TrustUi = vscodeTrustUi): Promise<boolean> {
  const [{ checkWorkspaceTrust, trustWorkspace }, { trustOverride }] = await Promise.all([
    import('../core/trust/workspaceTrust'),
    import('../core/trust/trustDecision'),
  ]);
  let verdict;
  try {
    verdict = await checkWorkspaceTrust(folder, trustOverride(false));
  } catch (err) {
    // A file that cannot be read (.ralph/config.json that does not parse): Start reports it with Open File.
    if (fileProblemOf(err)) throw err;
    ui.error(`Ralph: ${(err as Error).message}`);
    return false;
  }
  if (verdict.allowed) {
    if (verdict.via)
      log.warn('trust', `${folder}: workspace configuration ${verdict.state}; used because of ${verdict.via}`);
    return true;
  }
  const changed = verdict.state === 'changed';
  const what = changed ? (verdict.diff.length ? verdict.diff : ['(the same values in another order)']) : verdict.lines;
  const detail = [
    changed
      ? `What changed since you trusted it${verdict.trustedAt ? ` (${verdict.trustedAt})` : ''}:`
      : 'What it runs:',
    ...what,
    '',
    'Trust runs these with your permissions, from now on (also for `ralph run` in a terminal). Check them first.',
  ].join('\n');
  const message = changed
    ? `Ralph: the configuration of ${path.basename(folder)} that names programs to run (or a file its gates run) changed since you trusted it.`
    : `Ralph: the configuration of ${path.basename(folder)} names programs to run. Trust it?`;
  log.info('trust', `${folder}: asking (${verdict.state})\n${what.join('\n')}`);
  if (!(await ui.confirm(message, detail, TRUST_BUTTON))) {
    log.info('trust', `${folder}: not trusted; Start cancelled`);
    return false;
  }
  // Trust exactly what was shown: if the files changed while the modal was open, ask again instead.
  const r = await trustWorkspace(folder, { expectedHash: verdict.hash });
  if (!r) {
    ui.warn(
      'Ralph: the configuration changed while you were deciding; nothing was trusted. Start again to see the change.',
    );
    return false;
  }
  log.info('trust', `${folder}: trusted ${verdict.hash}`);
  return true;
}
