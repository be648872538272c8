import { type AgentEvent, ev, rawTypeOf } from '../stream/events';
import { type DecodedLine, type DecoderStats, LineDecoder } from '../stream/lineDecoder';
import type { AgentAdapter, StreamMapper } from './adapter';
import { agentAdapters, detectAgent } from './registry';

export interface AgentStreamOptions {
  /** The agent, or null to detect it from the first lines (recorded streams). */
  adapter: AgentAdapter | null;
  /** Longest line kept, bytes (config `maxLineBytes`). */
  maxLineBytes?: number;
  /** Lines looked at before the agent is decided when detecting; default 32. */
  detectLines?: number;
  /** Called once when the agent is known (null: none recognised, every line becomes `unknown`). */
  onAgent?: (adapter: AgentAdapter | null) => void;
}

/** Maps every line to `unknown`: for streams of agents no adapter knows (codex, gemini, …). */
const unknownMapper: StreamMapper = {
  map: (line) => [ev({ type: 'unknown', rawType: rawTypeOf(line), raw: line })],
};

/**
 * Bytes in, events out: a {@link LineDecoder} feeding an adapter's mapper. With no adapter given, up to
 * `detectLines` JSON lines are held back until the registry recognises the agent, then replayed in order.
 * `push` / `end` never throw because of the input; a throwing listener is the caller's own error.
 */
export class AgentStream {
  private readonly decoder: LineDecoder;
  private mapper: StreamMapper | null = null;
  private agent: AgentAdapter | null = null;
  private held: DecodedLine[] = [];
  private heldJson = 0;
  private readonly detectLines: number;

  constructor(
    private readonly onEvent: (e: AgentEvent) => void,
    private readonly opts: AgentStreamOptions,
  ) {
    this.decoder = new LineDecoder(
      { json: (value, lineNo) => this.json(value, lineNo), text: (text, lineNo) => this.text(text, lineNo) },
      { maxLineBytes: opts.maxLineBytes },
    );
    this.detectLines = opts.detectLines ?? 32;
    if (opts.adapter) this.decide(opts.adapter);
  }

  get stats(): DecoderStats {
    return this.decoder.stats;
  }

  /** The agent in use: given, detected, or null (not yet decided, or not recognised). */
  get adapter(): AgentAdapter | null {
    return this.agent;
  }

  push(chunk: Uint8Array | string): void {
    this.decoder.push(chunk);
  }

  end(): void {
    this.decoder.end();
    if (!this.mapper) this.detectNow();
    for (const e of this.mapper?.end?.() ?? []) this.onEvent(e);
  }

  /** A JSON line from the decoder: held while the agent is undecided, else mapped. */
  private json(value: Record<string, unknown>, lineNo: number): void {
    const mapper = this.mapper;
    if (!mapper) {
      this.held.push({ kind: 'json', value, lineNo });
      this.heldJson++;
      if (this.heldJson >= this.detectLines || this.decisive(value)) this.detectNow();
      return;
    }
    let events: AgentEvent[];
    try {
      events = mapper.map(value);
    } catch (err) {
      // A mapper bug must not stop the loop: the line is passed on as unknown with the reason.
      events = [
        ev({
          type: 'unknown',
          rawType: rawTypeOf(value),
          raw: value,
          issue: `mapper failed: ${(err as Error).message}`,
        }),
      ];
    }
    for (let i = 0; i < events.length; i++) this.onEvent(events[i]!);
  }

  /** A non-JSON line from the decoder: held while the agent is undecided, else given to the mapper's `mapText`. */
  private text(text: string, lineNo: number): void {
    const mapper = this.mapper;
    if (!mapper) {
      this.held.push({ kind: 'text', text, lineNo });
      if (this.heldJson >= this.detectLines) this.detectNow();
      return;
    }
    if (mapper.mapText) for (const e of mapper.mapText(text)) this.onEvent(e);
  }

  /** Early decision: the newest line is distinctive for some adapter. */
  private decisive(line: Record<string, unknown>): boolean {
    return Object.values(agentAdapters).some((a) => a.recognise(line) === 2);
  }

  private detectNow(): void {
    const json = this.held.flatMap((h) => (h.kind === 'json' ? [h.value] : []));
    this.decide(detectAgent(json));
    const held = this.held;
    this.held = [];
    for (const l of held)
      if (l.kind === 'json') this.json(l.value, l.lineNo);
      else this.text(l.text, l.lineNo);
  }

  private decide(adapter: AgentAdapter | null): void {
    this.agent = adapter;
    this.mapper = adapter ? adapter.createMapper() : unknownMapper;
    this.opts.onAgent?.(adapter);
  }
}
