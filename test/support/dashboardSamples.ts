/** One sample of every dashboard protocol message, both ways (protocol, page and host tests share them). */
import {
  PROTOCOL_VERSION,
  type DashboardState,
  type HostMessage,
  type LaneRow,
  type PageMessage,
  type RunHeader,
} from '../../src/protocol/dashboard';

export const header: RunHeader = {
  runId: 'r1',
  folder: '/w',
  state: 'running',
  source: 'checklist',
  agent: 'claude',
  item: { id: 'T1', title: 'Add tests' },
  attempt: 1,
  maxAttempts: 3,
  iteration: 2,
  maxIterations: 25,
  startedAt: 1_000,
  endedAt: null,
  progress: { done: 1, total: 3 },
  context: { tokens: 50_000, window: 200_000, warnAt: 148_750, rotateAt: 170_000 },
  costUsd: 0.12,
  question: { itemId: 'T1', text: 'Which port?', askedAt: 2_000 },
  ownedByThisWindow: true,
  live: true,
};

/** Three lanes of a parallel run: one working (near its warn line), one at a gate, one waiting on a question. */
export const lanes: LaneRow[] = [
  {
    lane: 1,
    activity: 'agent',
    purpose: 'work',
    item: { id: 'US-1', title: 'Login form' },
    attempt: 1,
    maxAttempts: 3,
    iteration: 4,
    context: { tokens: 140_000, window: 200_000, warnAt: 148_750, rotateAt: 170_000 },
    costUsd: 0.31,
    lastEnding: null,
    agent: 'claude',
  },
  {
    lane: 2,
    activity: 'gate',
    purpose: 'work',
    item: { id: 'US-2', title: 'Signup API' },
    attempt: 2,
    maxAttempts: 3,
    iteration: 5,
    context: { tokens: 0, window: 0, warnAt: 0, rotateAt: 0 },
    costUsd: 0,
    lastEnding: 'complete',
    agent: 'claude',
  },
  {
    lane: 3,
    activity: 'waiting',
    purpose: 'work',
    item: { id: 'US-4', title: 'Password reset mail' },
    attempt: 1,
    maxAttempts: 3,
    iteration: 6,
    context: { tokens: 52_000, window: 200_000, warnAt: 148_750, rotateAt: 170_000 },
    costUsd: 0,
    lastEnding: 'question',
    agent: 'codex',
  },
];

export const state: DashboardState = {
  run: header,
  lanes,
  tokens: [
    { iteration: 1, at: 1_500, contextTokens: 40_000, costUsd: 0.05 },
    { iteration: 2, at: 1_600, contextTokens: 9_000, costUsd: 0.06, rotated: true },
  ],
  tasks: [
    {
      itemId: 'T1',
      title: 'Add tests',
      iterations: 1,
      input: 10,
      output: 20,
      cacheRead: 30,
      cacheCreation: 40,
      costUsd: 0.05,
    },
  ],
  gates: [
    {
      id: 'g1',
      tier: 'basic',
      command: 'npm test',
      exitCode: 1,
      passed: false,
      durationMs: 1200,
      at: 1_700,
      failingLines: ['FAIL x'],
      hasLog: true,
    },
  ],
  log: [{ n: 1, at: 1_000, kind: 'loop', text: 'RALPH START' }],
  logTotal: 1,
  runs: [{ runId: 'r1', folder: '/w', label: 'r1', state: 'running', active: true }],
  pinnedRunId: null,
};

/** One message of every host → page type (and every update op). */
export const hostSamples: HostMessage[] = [
  { type: 'snapshot', v: PROTOCOL_VERSION, seq: 1, state },
  {
    type: 'update',
    seq: 2,
    ops: [
      { op: 'run', run: header },
      { op: 'run', run: null },
      { op: 'lanes', lanes },
      { op: 'lanes', lanes: [] },
      { op: 'tokens', points: state.tokens },
      { op: 'task', task: state.tasks[0]! },
      { op: 'gate', gate: state.gates[0]! },
      { op: 'log', lines: state.log, total: 1 },
      { op: 'runs', runs: state.runs, pinnedRunId: 'r1' },
    ],
  },
  { type: 'reply', id: 3, ok: true },
  { type: 'reply', id: 4, ok: false, error: 'no' },
  { type: 'reveal', itemId: 'T1' },
];

/** One message of every page → host type (and every request). */
export const pageSamples: PageMessage[] = [
  { type: 'ready', v: PROTOCOL_VERSION },
  { type: 'resync', lastSeq: 7 },
  { type: 'resync', lastSeq: null },
  { type: 'request', id: 1, request: { method: 'control', action: 'pause', runId: 'r1' } },
  { type: 'request', id: 2, request: { method: 'control', action: 'start', runId: null } },
  { type: 'request', id: 3, request: { method: 'answer', runId: 'r1', itemId: 'T1', text: 'Port 8080' } },
  { type: 'request', id: 4, request: { method: 'openGateLog', gateId: 'g1' } },
  { type: 'request', id: 5, request: { method: 'openFullLog' } },
  { type: 'request', id: 6, request: { method: 'pickRun', runId: null } },
];
