import * as assert from 'node:assert/strict';
import { showFileProblem } from '../../../src/extension/fileProblems';
import { Logger } from '../../../src/extension/logger';
import * as notify from '../../../src/extension/notify';
import { visibleText } from '../../../src/protocol/visibleText';
import { recorded, resetFake } from '../../support/fakeVscode';

const EVIL = 'Evil\x1b]0;PWNED\x07 ev\u202eil-bidi ad\u200bmin';
const SHOWN = 'Evil\\x1b]0;PWNED\\x07 ev\\u202eil-bidi ad\\u200bmin';

/** Notifications and the Output channel show repository text visibly (fake vscode). */
describe('extension: notifications and the Output channel show hidden characters', () => {
  beforeEach(() => resetFake());

  it('a file problem naming a hostile file shows it escaped, its button untouched', async () => {
    await showFileProblem({ file: `tasks/${EVIL}.md`, line: 2, column: 3, message: `refused: ${EVIL}` }, '/w');
    const m = recorded.messages[0]!;
    assert.equal(m.message, `Ralph: tasks/${SHOWN}.md:2:3: refused: ${SHOWN}`);
    assert.deepEqual(m.items, ['Open File']);
  });

  it('every kind, with a modal detail', async () => {
    await notify.showInformationMessage(EVIL);
    await notify.showWarningMessage(EVIL, { modal: true, detail: EVIL }, 'Trust');
    await notify.showErrorMessage(EVIL, 'Retry');
    for (const m of recorded.messages) assert.equal(visibleText(m.message as string), m.message);
    assert.deepEqual(
      recorded.messages.map((m) => [m.kind, m.message, m.items]),
      [
        ['info', SHOWN, []],
        ['warning', SHOWN, ['Trust']],
        ['error', SHOWN, ['Retry']],
      ],
    );
    assert.equal((recorded.messages[1]!.options as { detail: string }).detail, SHOWN);
  });

  it('the Output channel', () => {
    const log = new Logger();
    log.info('run', `started ${EVIL}`);
    log.error('run', new Error(EVIL));
    assert.deepEqual(recorded.logLines, [`Ralph info [run] started ${SHOWN}`, `Ralph error [run] ${SHOWN}`]);
  });
});
