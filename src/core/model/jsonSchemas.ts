import { z } from 'zod';
import { waveCheckpointSchema } from './waveCheckpoint';
import { ralphConfigSchema } from './config';
import { QUANTUM_STORY_STATUSES, quantumFileSchema } from './quantum';

/**
 * The JSON schemas VS Code validates Ralph's files with (`contributes.jsonValidation`: completions, hovers and
 * problems in the editor), built from the zod schemas the readers use so the two cannot drift. esbuild.mjs calls
 * {@link buildJsonSchemas} at build time and writes each to `dist/schemas/<file>`; a unit test holds the written
 * files, the manifest's jsonValidation and a fresh build equal, and checks that each schema accepts and refuses what
 * its zod schema does.
 *
 * Each schema describes the file as written (zod's input side: a key with a default may be left out). Objects stay
 * open to unknown keys, as the readers keep them.
 */
export interface JsonSchemaFile {
  /** File name under `dist/schemas/`. */
  file: string;
  /** `fileMatch` of its `contributes.jsonValidation` entry (VS Code glob patterns). */
  fileMatch: string[];
  /** The JSON schema (draft-07, what VS Code's JSON language service reads). */
  schema: Record<string, unknown>;
}

type Json = Record<string, unknown>;

/** Turns VS Code's setting links (`` `#ralph.maxParallel#` ``) into the config key they name (`` `maxParallel` ``). */
function configMarkdown(settingText: string): string {
  return settingText
    .replace(/ ?Overrides `[A-Za-z]+` in `\.ralph\/config\.json`\./, '')
    .replace(/`#ralph\.([A-Za-z]+)#`/g, '`$1`')
    .trim();
}

/** Copies every `description` (zod's `.describe()`) to `markdownDescription`, which VS Code renders as markdown. */
function markdownFromDescriptions(node: unknown): void {
  if (Array.isArray(node)) node.forEach(markdownFromDescriptions);
  else if (node && typeof node === 'object') {
    const o = node as Json;
    if (typeof o.description === 'string' && o.markdownDescription === undefined) o.markdownDescription = o.description;
    Object.values(o).forEach(markdownFromDescriptions);
  }
}

/** The draft-07 JSON schema of `schema` (input side), with a title. */
function toSchema(schema: z.ZodType, title: string): Json {
  const out = z.toJSONSchema(schema, { io: 'input', target: 'draft-7', unrepresentable: 'any' }) as Json;
  return { $schema: out.$schema, title, ...out };
}

const quantumStoryText: Record<string, string> = {
  id: 'Story id, e.g. `US-001`; `dependsOn` of other stories names it.',
  title: 'What the story delivers, in a few words.',
  acceptanceCriteria: 'What the gate and the reviewer check; the agent sees them in its prompt.',
  priority: 'Lower runs first among eligible stories; a story without one sorts last.',
  status:
    '`pending`, `in_progress`, `passed`, `failed` or `blocked`. A story is eligible when pending (or failed with attempts left) and every `dependsOn` story has passed.',
  dependsOn: 'Ids of the stories that must pass before this one starts.',
  retries: '`attempts` so far of `maxAttempts` (default 3); `failureLog` is what went wrong, fed to the next attempt.',
};
const quantumFileText: Record<string, string> = {
  project: 'Project name.',
  branchName: 'The feature branch the stories are merged into.',
  stories: 'The plan: one entry per story, run in dependency and priority order until each has passed its gate.',
  testCommand: "quantum-loop's test command (Ralph's gates come from `.ralph/command-policy` or `.ralph/config.json`).",
  staleThresholdMinutes: 'Minutes a story may stay `in_progress` before `ralph stale` calls it stale.',
};

/**
 * Builds every schema. `settingText` maps a `.ralph/config.json` key to its VS Code setting's markdownDescription
 * (package.json), the one text that describes it, shown as the key's hover in the file.
 */
export function buildJsonSchemas(settingText: Record<string, string> = {}): JsonSchemaFile[] {
  const config = toSchema(ralphConfigSchema, 'Ralph Loop configuration (.ralph/config.json)');
  config.markdownDescription =
    'Ralph Loop reads this file from the CLI and from VS Code; the `ralph.*` settings override it, command-line flags override both.';
  for (const [key, prop] of Object.entries(config.properties as Record<string, Json>)) {
    const text = settingText[key];
    if (text) prop.markdownDescription = configMarkdown(text);
  }

  const quantum = toSchema(quantumFileSchema, 'quantum-loop plan (quantum.json)');
  quantum.markdownDescription = 'A quantum-loop plan: Ralph runs its stories in dependency order, each behind a gate.';
  const qProps = quantum.properties as Record<string, Json>;
  for (const [key, text] of Object.entries(quantumFileText)) qProps[key]!.markdownDescription = text;
  const story = (qProps.stories as { items: Json }).items;
  const storyProps = story.properties as Record<string, Json>;
  for (const [key, text] of Object.entries(quantumStoryText)) storyProps[key]!.markdownDescription = text;
  // Suggested in completions without refusing other values (the reader keeps and reports them).
  storyProps.status!.examples = [...QUANTUM_STORY_STATUSES];

  const checkpoint = toSchema(
    waveCheckpointSchema,
    'IJFW subagent checkpoint (.ijfw/wave-*/subagent-*.checkpoint.json)',
  );
  checkpoint.markdownDescription =
    "One subagent's checkpoint. `ralph waves check` reads its status, time, next step and commits to tell a finished subagent from a truncated one.";
  markdownFromDescriptions(checkpoint);
  const cpProps = checkpoint.properties as Record<string, Json>;
  cpProps.status!.examples = ['DONE', 'DONE_WITH_CONCERNS', 'NEEDS_CONTEXT', 'BLOCKED'];

  return [
    { file: 'ralph-config.schema.json', fileMatch: ['**/.ralph/config.json'], schema: config },
    { file: 'quantum.schema.json', fileMatch: ['**/quantum.json'], schema: quantum },
    {
      file: 'wave-checkpoint.schema.json',
      fileMatch: ['**/.ijfw/wave-*/subagent-*.checkpoint.json'],
      schema: checkpoint,
    },
  ];
}
