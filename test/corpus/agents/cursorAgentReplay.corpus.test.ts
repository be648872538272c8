import * as fs from 'node:fs';
import * as path from 'node:path';
import { describeCorpus } from '../../support/corpus';
import { assertReplayedToSuccess, replayThroughCursorStub } from '../../support/stubs/installStubs';

describeCorpus(
  'cursor-agent through the adapter (the stub on PATH replaying the real captures of the corpus)',
  (corpus) => {
    const captures = path.join(corpus, 'stream-json', 'cursor-agent');
    for (const file of fs
      .readdirSync(captures)
      .filter((f) => f.endsWith('.jsonl'))
      .sort()) {
      it(`replays ${file} into events that end in success`, async () => {
        const { exit, events } = await replayThroughCursorStub(path.join(captures, file));
        assertReplayedToSuccess(exit, events);
      });
    }
  },
);
