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
    this.decoder = new LineDecoder((l) => this.line(l), { maxLineBytes: opts.maxLineBytes });
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

  private line(l: DecodedLine): void {
    if (!this.mapper) {
      this.held.push(l);
      if (l.kind === 'json') this.heldJson++;
      if (this.heldJson >= this.detectLines) this.detectNow();
      else if (l.kind === 'json' && this.decisive(l.value)) this.detectNow();
      return;
    }
    this.emit(l);
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
    for (const l of held) this.emit(l);
  }

  private decide(adapter: AgentAdapter | null): void {
    this.agent = adapter;
    this.mapper = adapter ? adapter.createMapper() : unknownMapper;
    this.opts.onAgent?.(adapter);
  }

  private emit(l: DecodedLine): void {
    const mapper = this.mapper!;
    let events: AgentEvent[];
    if (l.kind === 'json') {
      try {
        events = mapper.map(l.value);
      } catch (err) {
        // A mapper bug must not stop the loop: the line is passed on as unknown with the reason.
        events = [
          ev({
            type: 'unknown',
            rawType: rawTypeOf(l.value),
            raw: l.value,
            issue: `mapper failed: ${(err as Error).message}`,
          }),
        ];
      }
    } else {
      events = mapper.mapText ? mapper.mapText(l.text) : [];
    }
    for (const e of events) this.onEvent(e);
  }
}
