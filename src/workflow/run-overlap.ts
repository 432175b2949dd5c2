/**
 * The work a run overlaps with a running script: the previous step's `script_metadata.json`
 * update (off the critical path, never skipped) and the next learned step's preparation (review,
 * copy into `code/`). Both are small state holders runs.ts drives around the door.
 */
import { rmSync } from "node:fs";
import type { LearnedStepResult, PreparedStep } from "./fast-path.js";
import type { RunContext, StepReport } from "./runs.js";

/**
 * The previous learned step's metadata write, started while the next script runs (or before
 * anything else) and done on the thread pool; {@link settle} waits for every write started.
 */
export class DeferredMetadata {
  #pending: { record: () => Promise<void>; result: LearnedStepResult; report: StepReport } | undefined;
  readonly #writing = new Set<Promise<void>>();

  constructor(private readonly ctx: RunContext) {}

  /** Holds `result`'s metadata write (when it has one) until the next {@link flush}. */
  defer(result: LearnedStepResult, report: StepReport): void {
    if (result.recordMetadata) this.#pending = { record: result.recordMetadata, result, report };
  }

  /**
   * Starts the held metadata write; once it is done the report says whether it was recorded and a
   * failed write is noted on its ledger step. Never throws for that.
   */
  flush(): void {
    const d = this.#pending;
    this.#pending = undefined;
    if (!d) return;
    const writing = d.record().then(() => {
      d.report.metadata_recorded = d.result.metadataRecorded;
      if (d.result.metadataError) this.#note(d.report.ledger_step_id, `[${d.result.metadataError}]`);
    });
    this.track(writing);
  }

  /** Also waits, in {@link settle}, for `work` (a step's TMPDIR removal). `work` must not reject. */
  track(work: Promise<void>): void {
    this.#writing.add(work);
    void work.finally(() => this.#writing.delete(work));
  }

  /** Waits for every write started by {@link flush} (a run does not end before its metadata is written). */
  async settle(): Promise<void> {
    while (this.#writing.size > 0) await Promise.allSettled([...this.#writing]);
  }

  #note(ledgerStepId: string, note: string): void {
    try {
      this.ctx.store.tx(() => {
        const row = this.ctx.store.getStep(ledgerStepId);
        if (row) this.ctx.ledger.addLog(row, "run", note);
      });
    } catch {
      // the store is gone (the run is failing for that reason): the run's own error is reported
    }
  }
}

type Ready = Promise<PreparedStep | LearnedStepResult>;

/** The next learned step, prepared while the current script runs. */
export class NextStep {
  #ahead: { id: string; ready: Ready } | undefined;

  /** Starts preparing step `id` (errors are reported when its turn comes). */
  prepare(id: string, ready: Ready): void {
    ready.catch(() => {});
    this.#ahead = { id, ready };
  }

  /** The preparation of `id`, if it is the one ahead (taken: it is not discarded later). */
  take(id: string): Ready | undefined {
    if (this.#ahead?.id !== id) return undefined;
    const { ready } = this.#ahead;
    this.#ahead = undefined;
    return ready;
  }

  /** Drops whatever is prepared ahead and its folder (the run ends). */
  async discardAhead(): Promise<void> {
    const ahead = this.#ahead;
    this.#ahead = undefined;
    await discardPrepared(ahead?.ready);
  }
}

/** A prepared step that will not run after all (skipped, cancelled): leave no folder behind (nor its TMPDIR). */
export async function discardPrepared(ahead: Ready | undefined): Promise<void> {
  const ready = await ahead?.catch(() => undefined);
  if (!ready || !("kind" in ready)) return;
  rmSync(ready.outputDir, { recursive: true, force: true });
  if (ready.tmp) rmSync(ready.tmp.dir, { recursive: true, force: true });
}
