import * as fs from 'node:fs';
import * as path from 'node:path';
import { describeCorpus } from '../../support/corpus';
import { describeHandoffFiles } from '../../support/handoffChecks';

describeCorpus('handoff: the seed files (corpus ralph-wiggum-plugin/handoff-*.md)', (dir) => {
  describeHandoffFiles(
    () => fs.readFileSync(path.join(dir, 'ralph-wiggum-plugin', 'handoff-skeleton.md'), 'utf8'),
    () => fs.readFileSync(path.join(dir, 'ralph-wiggum-plugin', 'handoff-after-gate-fail.md'), 'utf8'),
  );
});
