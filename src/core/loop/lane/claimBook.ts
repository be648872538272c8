import { carriedBaseline, marksChanged, personMarksFor } from '../../model/claimBaseline';
import { removeFolderCaches } from '../../store/snapshotCache';
import type { EngineEvent, WorkItemRef } from '../events';
import { writeBaselineMirror } from '../baselineMirror';
import { markedByPerson, readPersonMarks, removePersonMarks } from '../personMarks';
import type { Claim, ClaimBaseline, WorkItem, WorkSource } from '../../sources/work/workSources';
import type { RunRecordPatch } from './agentIteration';
import { ref } from './itemRef';

/*
 * The lane's claim book: the claim baseline (the last verified state of every item, model/claimBaseline.ts) carried
 * from verdict to verdict, the marks of the children the run starts (an agent, a gate, `notify`: each runs code the
 * agent could have written), and putting back what no gate verified. A task is done only when its source says so and
 * a gate confirmed it; everything here serves that rule (docs/truth-attacks.md).
 */

/**
 * The claims since `baseline` that are not a person's own (`ralph task done` from outside an iteration after the
 * baseline was taken, and not written while an agent ran: `personMarksFor`): what a green gate must confirm, or what
 * goes back.
 */
export async function unverifiedClaims(folder: string, source: WorkSource, baseline: ClaimBaseline): Promise<Claim[]> {
  const claims = await source.claimsSince(baseline);
  if (!claims.length) return [];
  const theirs = markedByPerson(personMarksFor(await readPersonMarks(folder), baseline), claims, baseline.at);
  return claims.filter((c) => !theirs.includes(c));
}

/** What the claim book needs of its lane: where it works, how run.json is written, how it reports. */
export interface ClaimBookPorts {
  folder: string;
  runId: string;
  /** Writes fields of the run's record (run.json), with the fields deferred before them; the run shell owns the file. */
  record(patch: RunRecordPatch): Promise<void>;
  /** Keeps fields of run.json for the lane's next write ({@link record}, {@link flush}); later values win. */
  defer(patch: RunRecordPatch): void;
  /** Writes the deferred fields, if any. */
  flush(): Promise<void>;
  emit(e: EngineEvent): void;
  warn(what: string): (err: unknown) => void;
  /** A message with the workspace's absolute path shortened (for events). */
  shown(text: string): string;
  /** Reports the source's progress when it changed (after a put-back). */
  progress(source: WorkSource): Promise<void>;
}

/**
 * The claim baseline of one lane and every write of it (run.json `claimBaseline` and its mirror in the user's state
 * folder, which the agent cannot edit). Null before the run opens it and after its end closed it.
 *
 * A write that only makes what a crash would leave more cautious waits for the lane's next one (an item's start, a
 * child's end, a verdict carried: docs/decisions/0027-deferred-lane-writes.md): until it is written, the record on
 * disk is the one before it (the claims of the last verdict, or the child's marks at its start, so that every mark
 * changed since counts as the child's). The lane writes what was deferred with its next write, before any child starts ({@link markChildStart})
 * and before it waits ({@link flush}).
 */
export class ClaimBook {
  baseline: ClaimBaseline | null = null;
  /** The baseline's JSON as last mirrored by {@link mirror}; undefined when unknown (none yet, or a write failed). */
  private mirrored: string | undefined;
  /** The mirror's write was deferred with the record's: {@link flush} writes it. */
  private mirrorOwed = false;

  constructor(private readonly p: ClaimBookPorts) {}

  /** The state the run found is its first verified baseline; crash recovery has put back what earlier runs left. */
  async open(source: WorkSource): Promise<void> {
    this.baseline = await source.snapshot();
    await this.p.record({ claimBaseline: this.baseline });
    await this.mirror();
  }

  /** The unverified claims now (none without an open baseline). */
  unverified(source: WorkSource): Promise<Claim[]> {
    return this.baseline ? unverifiedClaims(this.p.folder, source, this.baseline) : Promise.resolve([]);
  }

  /**
   * What the source says now against the carried baseline: the unverified claims (a person's marks left out) and
   * the items of the run's source that vanished since the run saw them.
   */
  async truthNow(source: WorkSource): Promise<{ unverified: Claim[]; vanished: string[] }> {
    const b = this.baseline;
    if (!b) return { unverified: [], vanished: [] };
    const unverified = await unverifiedClaims(this.p.folder, source, b);
    const now = await source.snapshot();
    const present = new Set(now.items ?? []);
    const vanished = b.items && now.items ? b.items.filter((k) => !present.has(k)) : [];
    return { unverified, vanished };
  }

  /**
   * An item starts: the baseline is carried, never read afresh (what became done since the last verdict is still a
   * claim), and kept in run.json with the current item, so a later start can undo what an unfinished run claimed.
   */
  async startItem(source: WorkSource, item: WorkItem): Promise<void> {
    this.baseline = carriedBaseline(this.baseline, await source.snapshot());
    // Written with the agent's start (markChildStart), which comes next: until then a crash leaves the baseline of the
    // last verdict, which carrying only narrows, and an item the run's end or recovery gives back as today.
    this.p.defer({
      currentItem: { source: item.source, id: item.id, title: item.title },
      claimBaseline: this.baseline,
    });
    this.mirrorOwed = true;
  }

  /** Writes what was deferred (run.json's fields, the mirror): before the lane waits, and at its end. */
  async flush(): Promise<void> {
    await this.p.flush();
    if (this.mirrorOwed) await this.mirror();
  }

  /**
   * The open claims are settled (put back): the baseline is carried (what was undone leaves it, nothing joins it)
   * and kept in run.json. `verified`: the claims a green gate verified, which join it. `also`: other fields of
   * run.json written in the same write (the item's end). Deferred to the lane's next write (the next item's agent
   * start, a wait, the end): a crash before it leaves the baseline before the verdict, whose verified claims then go
   * back as unverified ones (never the other way round).
   */
  async carry(source: WorkSource, verified: readonly Claim[] = [], also?: RunRecordPatch): Promise<void> {
    this.baseline = carriedBaseline(
      this.baseline,
      await source.snapshot(),
      verified.map((c) => ({ slot: c.slot, key: c.key })),
    );
    this.p.defer({ ...also, claimBaseline: this.baseline });
    this.mirrorOwed = true;
  }

  /** Puts back `items` (or every unverified claim since the baseline), with a `claimPutBack` event naming them. */
  async putBack(source: WorkSource, reason: string, items?: readonly WorkItemRef[]): Promise<void> {
    const back = items ?? (this.baseline ? await unverifiedClaims(this.p.folder, source, this.baseline) : []);
    if (!items && !back.length) return;
    const how: string[] = [];
    await source.putBack([...back], how);
    this.p.emit({
      type: 'claimPutBack',
      items: back.map((i) => ref(i)),
      reason,
      ...(how.length ? { how: how.map((h) => this.p.shown(h)) } : {}),
    });
    await this.p.progress(source);
  }

  /** At the run's end: puts back what is open since the baseline; false (with a warning) when that failed. */
  async putBackAtEnd(source: WorkSource, reason: string): Promise<boolean> {
    if (!this.baseline) return true;
    return this.putBack(source, reason).then(
      () => true,
      (err: Error) => {
        this.p.emit({
          type: 'warning',
          message: `could not put back unverified claims: ${err.message} (the next run puts them back)`,
        });
        return false;
      },
    );
  }

  /**
   * The run's claims are settled: marks written while a child ran leave `.ralph/person-done.json` (else they read as
   * a person's), and the baseline is closed in run.json and its mirror.
   */
  async close(): Promise<void> {
    await removePersonMarks(this.p.folder, this.baseline?.agentMarks ?? []).catch(
      this.p.warn('could not remove the claimed marks from .ralph/person-done.json'),
    );
    this.baseline = null;
    this.mirrored = undefined;
    this.mirrorOwed = false;
    await this.p.record({ claimBaseline: null }).catch(this.p.warn('could not clear the claim baseline in run.json'));
    await writeBaselineMirror(this.p.folder, this.p.runId, null).catch(
      this.p.warn('could not remove the claim baseline mirror'),
    );
  }

  /**
   * Before a child of the run starts: the person marks as they are now go into the baseline (`marksAtAgentStart`,
   * run.json and the mirror), so marks written while it runs are told apart even if the runner dies meanwhile: gate
   * and notify code are not "a person". Returns that reading (none without an open baseline). `also`: other fields
   * of run.json written in the same write (the iteration's start), or alone without an open baseline. Whatever was
   * deferred is written too: nothing of the run waits to be written while a child runs.
   */
  async markChildStart(also?: RunRecordPatch): Promise<Record<string, string> | null> {
    if (!this.baseline) {
      await (also ? this.p.record(also) : this.flush());
      return null;
    }
    const marks = await readPersonMarks(this.p.folder);
    this.baseline = { ...this.baseline, marksAtAgentStart: marks };
    await this.p.record({ ...also, claimBaseline: this.baseline });
    // Not started unless mirrored: recovery trusts the mirror over run.json, and a mirror without these marks (a full
    // state folder) reads a mark the child forges as a person's own after a crash.
    await this.mirror(true);
    return marks;
  }

  /**
   * After a child of the run ended (`who`: "the agent", "the basic gate", "notify (question)"; `when`: "iteration
   * 3"): the folder's answer-cache entries and parse caches are removed, under every spelling of the folder (the
   * child's code could have forged them), and marks that changed while it ran join `agentMarks` (claims a gate
   * verifies, never a person's own for this run), with a warning naming them; `marksAtAgentStart` is dropped.
   * `also`: other fields of run.json written in the same write (the agent's end), or alone when no marks were taken.
   * Deferred to the lane's next write (see {@link ClaimBook}): the baseline on disk keeps the child's marks at its
   * start until then, so a crash meanwhile counts every mark changed since as the child's.
   */
  async markChildEnd(
    before: Record<string, string> | null,
    who: string,
    when?: string,
    also?: RunRecordPatch,
  ): Promise<void> {
    removeFolderCaches(this.p.folder);
    if (!before || !this.baseline) {
      if (also) this.p.defer(also);
      return;
    }
    const changed = marksChanged(before, await readPersonMarks(this.p.folder));
    const { marksAtAgentStart: _, ...rest } = this.baseline;
    const agentMarks = [...new Set([...(rest.agentMarks ?? []), ...changed])];
    this.baseline = agentMarks.length ? { ...rest, agentMarks } : rest;
    if (changed.length)
      this.p.emit({
        type: 'warning',
        message: `${when ? `${when}: ` : ''}.ralph/person-done.json changed while ${who} ran (${changed.join(', ')}): those marks are claims a gate must verify, not a person's`,
      });
    this.p.defer({ ...also, claimBaseline: this.baseline });
    this.mirrorOwed = true;
  }

  /** Runs `child` between {@link markChildStart} and {@link markChildEnd} (also when it throws). */
  async aroundChild<T>(who: string, child: () => Promise<T>): Promise<T> {
    const before = await this.markChildStart();
    try {
      return await child();
    } finally {
      await this.markChildEnd(before, who);
    }
  }

  /**
   * Mirrors the baseline outside the workspace (the agent can edit run.json); a failure is a warning, or with `strict`
   * (a child's start) an error. A baseline equal to the one this book mirrored last is not written again (an item's
   * start carries the baseline the last verdict wrote): no child of the run ran since that write, since a child's
   * start and its end each write a different baseline (with `marksAtAgentStart`, then without), and the next child's
   * start writes it in any case.
   */
  private async mirror(strict = false): Promise<void> {
    this.mirrorOwed = false;
    const text = this.baseline ? JSON.stringify(this.baseline) : null;
    if (text !== null && text === this.mirrored) return;
    this.mirrored = undefined;
    try {
      await writeBaselineMirror(this.p.folder, this.p.runId, this.baseline);
      this.mirrored = text ?? undefined;
    } catch (err) {
      if (strict) throw err;
      this.p.warn('could not mirror the claim baseline in the state folder')(err);
    }
  }
}
