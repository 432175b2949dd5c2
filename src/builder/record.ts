/**
 * A Builder run in the ledger: one plan (`kind: builder_run`) whose steps are the attempts. A
 * repair is a deviation child of the attempt it repairs (the ledger's own retry shape: a failed
 * attempt is recovered when its repair passes), so the plan's roll-up gives the final verdict.
 * The chain `A`, `A.1`, `A.1.1`, `A.1.1.1` holds the first attempt and the three repairs within
 * the ledger's depth limit; a `code_exec` attempt after exhausted repairs hangs beside the last
 * repair (the plan fails: no script was built). Each attempt carries its log, its tokens (a
 * `tokens` metric) and its exit code.
 */
import { headTail, LOG_HEAD_BYTES, LOG_TAIL_BYTES } from "../core/index.js";
import { MAX_DEPTH } from "../core/limits.js";
import type { Ledger } from "../ledger/index.js";
import type { Store } from "../store/index.js";

/** Lease of an attempt step: as long as one agent may take, plus a margin. */
const ATTEMPT_LEASE_SECONDS = 3600;

export interface AttemptClose {
  passed: boolean;
  summary: string;
  log: string;
  tokens: number;
  exitCode: number | null;
  /** Title of the next attempt, when there is one. */
  next?: string;
}

export class AttemptRecorder {
  readonly planId: string;
  #current: string;
  readonly #store: Store;
  readonly #ledger: Ledger;

  private constructor(store: Store, ledger: Ledger, planId: string, first: string) {
    this.#store = store;
    this.#ledger = ledger;
    this.planId = planId;
    this.#current = first;
  }

  /** Publishes the plan with the first attempt and starts it. */
  static open(
    deps: { store: Store; ledger: Ledger },
    goal: string,
    firstTitle: string,
    cwd: string,
  ): AttemptRecorder {
    return deps.store.tx(() => {
      const plan = deps.ledger.publish(
        { goal, max_revisions: 20, steps: [{ title: firstTitle, type: "CODE" }] },
        { kind: "builder_run", cwd },
      );
      const first = plan.step_ids[0] as string;
      deps.ledger.start({ step_id: first, lease_seconds: ATTEMPT_LEASE_SECONDS });
      return new AttemptRecorder(deps.store, deps.ledger, plan.plan_id, first);
    });
  }

  /** The ledger id of the attempt in progress. */
  get current(): string {
    return this.#current;
  }

  /**
   * Closes the attempt in progress; with `next`, opens and starts the next one first (so the plan
   * never looks finished in between). Returns the next attempt's id.
   */
  close(c: AttemptClose): string | undefined {
    return this.#store.tx(() => {
      const id = this.#current;
      let nextId: string | undefined;
      if (c.next !== undefined) {
        const depth = id.split(".").length - 1;
        const parent = depth < MAX_DEPTH ? id : id.slice(0, id.lastIndexOf("."));
        const dev = this.#ledger.deviate({
          parent_step_id: parent,
          justification: c.passed ? `next attempt: ${c.next}` : `attempt ${id} did not pass: ${c.next}`,
          sub_steps: [{ title: c.next, type: "CODE" }],
        });
        nextId = dev.sub_step_ids[0] as string;
      }
      const cut = headTail(c.log, LOG_HEAD_BYTES, LOG_TAIL_BYTES);
      const log = { kind: "builder", text: cut.text, ...(cut.truncated ? { full: c.log } : {}) };
      const opts = { log, ...(c.exitCode !== null ? { exitCode: c.exitCode } : {}) };
      if (c.passed) this.#ledger.complete({ step_id: id, summary: c.summary }, opts);
      else this.#ledger.fail({ step_id: id, reason: c.summary }, opts);
      this.#ledger.recordMetricInTx({ name: "tokens", value: c.tokens, unit: "tokens", step_id: id });
      if (nextId !== undefined) {
        this.#ledger.start({ step_id: nextId, lease_seconds: ATTEMPT_LEASE_SECONDS });
        this.#current = nextId;
      }
      return nextId;
    });
  }

  /**
   * Fails the attempt in progress when a build stops on an error (no model configured, a store or
   * file system failure), so the plan does not look alive. Never throws.
   */
  abort(reason: string): void {
    try {
      const step = this.#store.getStep(this.#current);
      if (step && (step.status === "IN_PROGRESS" || step.status === "PENDING"))
        this.close({ passed: false, summary: reason, log: reason, tokens: 0, exitCode: null });
    } catch {
      // the error being reported is the one that matters
    }
  }

  /** The plan's status after the last attempt closed. */
  status(): string {
    return this.#store.getPlan(this.planId)?.status ?? "UNKNOWN";
  }
}
