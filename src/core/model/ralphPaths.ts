import * as path from 'node:path';

/**
 * Every path under a workspace folder's `.ralph/`, named once (ARCHITECTURE.md "Layout on disk"). Pure: builds
 * paths, touches nothing. Modules that read or write these files take their paths from here.
 */
export const RALPH_DIR = '.ralph';

/** `.ralph/` of a workspace folder. */
export const ralphDir = (folder: string): string => path.join(folder, RALPH_DIR);

/** Files and folders directly under `.ralph/` (names relative to it). */
export const RALPH_FILES = {
  /** The configuration of both faces (model/config.ts). */
  config: 'config.json',
  /** ralph-wiggum's command policy: gates, rewrite, deny, wrap, protect (gates/commandPolicy.ts). */
  commandPolicy: 'command-policy',
  /** The rolling handoff between iterations (gates/handoff.ts). */
  handoff: 'handoff.md',
  /** Gate logs and breadcrumbs `<label>-latest.{log,exit,cmd,summary}` (gates/gateRunner.ts). */
  gates: 'gates',
  /** Failed attempts per item, carried into the next prompt (loop/attemptStore.ts). */
  attempts: 'attempts.json',
  /** Checklist boxes the loop blocked, with reasons (sources/work/checklistSource.ts). */
  blocked: 'blocked.json',
  /** Items a person marked done with `ralph task done` from outside an iteration (loop/personMarks.ts). */
  personDone: 'person-done.json',
  /** The engine's lock: one run per folder. */
  engineLock: 'engine',
  /** ralph-wiggum's stop request: the agent yields at its next commit (a global STOP sentinel). */
  stopRequested: 'stop-requested',
  /** Present while the agent has been told to wrap up (the context warning). */
  contextWarning: 'context-warning-active',
  /** Prompt templates that override the built-in ones, `<name>.md` (loop/prompt.ts). */
  prompts: 'prompts',
  /** cursor-agent's isolated CURSOR_CONFIG_DIR. */
  cursorConfig: 'cursor-config',
  /** The activity stream, the error log and the progress summary (loop/activityLog.ts). */
  activityLog: 'activity.log',
  errorsLog: 'errors.log',
  progressMd: 'progress.md',
  /** One folder per run, `runs/<id>/`. */
  runs: 'runs',
} as const;

/** The path of a file or folder directly under `.ralph/`. */
export const ralphFile = (folder: string, name: keyof typeof RALPH_FILES): string =>
  path.join(folder, RALPH_DIR, RALPH_FILES[name]);

/** Files inside a run's folder `.ralph/runs/<id>/` (flow-next's runs use the same PAUSE / STOP / progress.txt names). */
export const RUN_FILES = {
  /** The run record (model/runRecord.ts). */
  record: 'run.json',
  /** The typed event log, one JSON object per line. */
  events: 'events.jsonl',
  /** flow-next's progress.txt format (sources/flowNext/progressTxt.ts). */
  progress: 'progress.txt',
  /** Sentinels: PAUSE is level-triggered; STOP is kept for audit. */
  pause: 'PAUSE',
  stop: 'STOP',
} as const;

/** `.ralph/runs/<runId>/`. */
export const ralphRunDir = (folder: string, runId: string): string =>
  path.join(folder, RALPH_DIR, RALPH_FILES.runs, runId);

/** A file in the folder of one of our runs. */
export const ralphRunFile = (folder: string, runId: string, name: keyof typeof RUN_FILES): string =>
  path.join(ralphRunDir(folder, runId), RUN_FILES[name]);
