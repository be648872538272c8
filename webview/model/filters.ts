import { LOG_KINDS, type LogKind, type LogLine } from '../../src/protocol/dashboard';

/** The Ralph log's filter: the kinds shown and a text every shown line contains (case-insensitive; empty = any). */
export interface LogFilter {
  kinds: Readonly<Record<LogKind, boolean>>;
  text: string;
}

/** Every kind shown, no text. */
export function allKinds(): LogFilter {
  return { kinds: Object.fromEntries(LOG_KINDS.map((k) => [k, true])) as Record<LogKind, boolean>, text: '' };
}

/** Whether `line` passes `filter`. */
export function matchesFilter(line: LogLine, filter: LogFilter): boolean {
  if (!filter.kinds[line.kind]) return false;
  if (!filter.text) return true;
  return line.text.toLowerCase().includes(filter.text.toLowerCase());
}

/** `filter` with kind `kind` toggled. */
export function toggleKind(filter: LogFilter, kind: LogKind): LogFilter {
  return { ...filter, kinds: { ...filter.kinds, [kind]: !filter.kinds[kind] } };
}

/** Reads a filter kept in the page's state (anything else gives the default). */
export function filterFromState(raw: unknown): LogFilter {
  const f = allKinds();
  if (!raw || typeof raw !== 'object') return f;
  const r = raw as { kinds?: unknown; text?: unknown };
  if (typeof r.text === 'string') f.text = r.text.slice(0, 500);
  if (r.kinds && typeof r.kinds === 'object') {
    const kinds = { ...f.kinds };
    for (const k of LOG_KINDS)
      if (typeof (r.kinds as Record<string, unknown>)[k] === 'boolean')
        kinds[k] = (r.kinds as Record<string, boolean>)[k]!;
    f.kinds = kinds;
  }
  return f;
}
