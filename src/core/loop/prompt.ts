import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import iterationTemplate from './templates/iteration.md';
import reviewerTemplate from './templates/reviewer.md';
import { ralphFile } from '../model/ralphPaths';

/** Built-in prompt templates; a user overrides one with `.ralph/prompts/<name>.md`. */
export const BUILTIN_TEMPLATES = { iteration: iterationTemplate, reviewer: reviewerTemplate } as const;
export type TemplateName = keyof typeof BUILTIN_TEMPLATES;

/** Placeholders the engine fills: `{{NAME}}` in a template. */
export type PromptVars = Partial<
  Record<
    'ITERATION' | 'PROGRESS' | 'HANDOFF' | 'COMPLETE_SIGNAL_RULE' | 'GIT_NOTE' | 'GATES' | 'ATTEMPTS' | 'TASK',
    string
  >
>;

/** The override path of a template in a workspace folder. */
export function templateOverridePath(folder: string, name: TemplateName): string {
  return path.join(ralphFile(folder, 'prompts'), `${name}.md`);
}

/** Loads a template: the workspace override when it exists, else the built-in one. */
export async function loadTemplate(folder: string, name: TemplateName): Promise<string> {
  try {
    return await readFile(templateOverridePath(folder, name), 'utf8');
  } catch {
    return BUILTIN_TEMPLATES[name];
  }
}

/**
 * Fills `{{NAME}}` placeholders (unknown ones are left as written, so a typo in an override is visible) and
 * collapses the blank lines an empty section leaves behind.
 */
export function renderTemplate(template: string, vars: PromptVars): string {
  const filled = template.replace(/\{\{([A-Z_]+)\}\}/g, (m, key: string) =>
    key in vars ? ((vars as Record<string, string>)[key] ?? '') : m,
  );
  return filled.replace(/\n{3,}/g, '\n\n').trimEnd() + '\n';
}
