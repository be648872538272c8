import {
  SNAPSHOT_TOKEN_POINTS,
  type DashboardState,
  type HostMessage,
  type LogLine,
  type UpdateOp,
} from '../../src/protocol/dashboard';

/** What the page holds besides the log lines (those live in the bounded {@link LogBuffer}). */
export interface PageState {
  /** Sequence number of the last snapshot or update applied; null before the first snapshot. */
  seq: number | null;
  /** True after a gap was seen and a new snapshot asked for: updates are ignored until it comes. */
  awaitingSnapshot: boolean;
  data: Omit<DashboardState, 'log'>;
}

/** What the page must do after a message, besides showing the new state. */
export type PageEffect =
  | { kind: 'resync'; lastSeq: number | null }
  | { kind: 'resetLog'; lines: LogLine[] }
  | { kind: 'appendLog'; lines: LogLine[] }
  | { kind: 'reveal'; itemId: string | null };

export function initialPageState(): PageState {
  return {
    seq: null,
    awaitingSnapshot: false,
    data: { run: null, lanes: [], tokens: [], tasks: [], gates: [], logTotal: 0, runs: [], pinnedRunId: null },
  };
}

/**
 * Applies one host message (already parsed) to the page state. A snapshot replaces everything and restarts the
 * numbering; an update applies when its `seq` is the next one, is ignored when older (stale), and on a gap asks
 * for a new snapshot (once) and leaves the state as it was. Replies are not state.
 */
export function reducePage(s: PageState, msg: HostMessage): { state: PageState; effects: PageEffect[] } {
  switch (msg.type) {
    case 'snapshot': {
      const { log, ...data } = msg.state;
      return { state: { seq: msg.seq, awaitingSnapshot: false, data }, effects: [{ kind: 'resetLog', lines: log }] };
    }
    case 'update': {
      if (s.awaitingSnapshot) return { state: s, effects: [] };
      if (s.seq === null || msg.seq > s.seq + 1)
        return { state: { ...s, awaitingSnapshot: true }, effects: [{ kind: 'resync', lastSeq: s.seq }] };
      if (msg.seq <= s.seq) return { state: s, effects: [] };
      let data = s.data;
      const effects: PageEffect[] = [];
      for (const op of msg.ops) data = applyOp(data, op, effects);
      return { state: { seq: msg.seq, awaitingSnapshot: false, data }, effects };
    }
    case 'reply':
      return { state: s, effects: [] };
    case 'reveal':
      return { state: s, effects: [{ kind: 'reveal', itemId: msg.itemId }] };
  }
}

function applyOp(d: PageState['data'], op: UpdateOp, effects: PageEffect[]): PageState['data'] {
  switch (op.op) {
    case 'run':
      return { ...d, run: op.run };
    case 'lanes':
      return { ...d, lanes: op.lanes };
    case 'tokens': {
      const tokens = d.tokens.concat(op.points);
      return {
        ...d,
        tokens: tokens.length > SNAPSHOT_TOKEN_POINTS ? tokens.slice(tokens.length - SNAPSHOT_TOKEN_POINTS) : tokens,
      };
    }
    case 'task': {
      const i = d.tasks.findIndex((t) => t.itemId === op.task.itemId);
      const tasks = i < 0 ? [...d.tasks, op.task] : d.tasks.map((t, j) => (j === i ? op.task : t));
      return { ...d, tasks };
    }
    case 'gate': {
      const i = d.gates.findIndex((g) => g.id === op.gate.id);
      const gates = i < 0 ? [...d.gates, op.gate] : d.gates.map((g, j) => (j === i ? op.gate : g));
      return { ...d, gates };
    }
    case 'log':
      effects.push({ kind: 'appendLog', lines: op.lines });
      return { ...d, logTotal: op.total };
    case 'runs':
      return { ...d, runs: op.runs, pinnedRunId: op.pinnedRunId };
  }
}
