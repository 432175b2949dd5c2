/**
 * The work a run overlaps with a running script: the previous step's `script_metadata.json`
 * update (off the critical path, never skipped) and the next learned step's preparation (review,
 * copy into `code/`). Both are small state holders runs.ts drives around the door.
 */
import { rmSync } from "node:fs";
import type { LearnedStepResult, PreparedStep } from "./fast-path.js";
import type { RunContext, StepReport } from "./runs.js";

/** The previous learned step's metadata write, done while the next script runs (or before anything else). */
export class DeferredMetadata {
  #pending: { record: () => void; result: LearnedStepResult; report: StepReport } | undefined;

  constructor(private readonly ctx: RunContext) {}

  /** Holds `result`'s metadata write (when it has one) until the next {@link flush}. */
  defer(result: LearnedStepResult, report: StepReport): void {
    if (result.recordMetadata) this.#pending = { record: result.recordMetadata, result, report };
  }

  /** Writes the held metadata now; a failed write is noted on its ledger step. Never throws for that. */
  flush(): void {
    const d = this.#pending;
    this.#pending = undefined;
    if (!d) return;
    d.record();
    d.report.metadata_recorded = d.result.metadataRecorded;
    if (d.result.metadataError) {
      const note = `[${d.result.metadataError}]`;
      this.ctx.store.tx(() => {
        const row = this.ctx.store.getStep(d.report.ledger_step_id);
        if (row) this.ctx.ledger.addLog(row, "run", note);
      });
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

/** A prepared step that will not run after all (skipped, cancelled): leave no folder behind. */
export async function discardPrepared(ahead: Ready | undefined): Promise<void> {
  const ready = await ahead?.catch(() => undefined);
  if (ready && "kind" in ready) rmSync(ready.outputDir, { recursive: true, force: true });
}
