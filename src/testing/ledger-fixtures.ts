/**
 * An in-process ledger for tests: a real {@link SqliteStore} on a file in a fresh temp folder, a
 * {@link BlobStore} beside it, a {@link ManualClock} and (by default) an empty {@link Redactor}, so
 * nothing in the caller's environment changes what gets stored.
 *
 * @example
 * const fx = makeLedgerFixture();
 * onTestFinished(() => fx.dispose());
 * const plan = fx.publish("ship it", ["THINKING", "COMMAND"]);
 * fx.ledger.start({ step_id: plan.step_ids[0]! });
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { iso, ManualClock, Redactor } from "../core/index.js";
import type { PublishInput } from "../ledger/flows/publish-plan.js";
import type { StepSpecInput } from "../ledger/inputs.js";
import { Ledger } from "../ledger/ledger.js";
import type { StepType } from "../ledger/states.js";
import { BlobStore } from "../store/blobs.js";
import { openSqlite } from "../store/sqlite/open.js";
import { SqliteStore } from "../store/sqlite/sqlite-store.js";
import type { EventRow, StepRow } from "../store/types.js";

export interface LedgerFixtureOptions {
  /** Masks secrets in stored text. Default: a Redactor with nothing registered. */
  redactor?: Redactor;
  /** Use `:memory:` instead of a database file in the temp folder. Default false. */
  memory?: boolean;
  /** Lease holder recorded on started steps. Default `test-holder@test-host`. */
  holder?: string;
  /** Start time of the clock (epoch ms). Default 2026-01-01T00:00:00Z. */
  startMs?: number;
}

export interface LedgerFixture {
  ledger: Ledger;
  store: SqliteStore;
  blobs: BlobStore;
  clock: ManualClock;
  /** The temp folder holding the database and the blobs (resolved, no symlinks). */
  dir: string;
  /** A folder inside `dir` that is not in any git repo: the default `cwd` of {@link publish}. */
  workDir: string;
  /**
   * Publishes a plan whose steps have the given types (titles `step 1`, `step 2`, …) from
   * `workDir`. Pass a full input object instead of types for anything else.
   */
  publish(
    goal: string,
    steps: readonly (StepType | StepSpecInput)[],
    extra?: Partial<Omit<PublishInput, "goal" | "steps">>,
    cwd?: string,
  ): ReturnType<Ledger["publish"]>;
  /** Registers a project (optionally bound to a repo folder). */
  addProject(name: string, repoPath?: string | null): void;
  /** Every event (of one plan when given), oldest first. */
  events(planId?: string): EventRow[];
  /** Types of the events appended after event id `sinceId`. */
  eventTypesSince(sinceId: number): string[];
  /** The current step row (throws when missing). */
  step(stepId: string): StepRow;
  /** Closes the database and removes the temp folder. */
  dispose(): void;
}

export function makeLedgerFixture(opts: LedgerFixtureOptions = {}): LedgerFixture {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "ratchet-ledger-test-")));
  const workDir = join(dir, "work");
  mkdirSync(workDir);
  const clock = new ManualClock(opts.startMs);
  const db = openSqlite(opts.memory ? ":memory:" : join(dir, "ledger.db"), { create: true });
  const store = new SqliteStore(db, () => iso(clock.now()));
  const blobs = new BlobStore(join(dir, "blobs"));
  const ledger = new Ledger({
    store,
    blobs,
    clock,
    holder: opts.holder ?? "test-holder@test-host",
    redactor: opts.redactor ?? new Redactor(),
  });
  let disposed = false;

  return {
    ledger,
    store,
    blobs,
    clock,
    dir,
    workDir,
    publish(goal, steps, extra = {}, cwd = workDir) {
      const specs = steps.map((s, i) => (typeof s === "string" ? { title: `step ${i + 1}`, type: s } : s));
      return ledger.publish({ goal, steps: specs, ...extra }, { cwd });
    },
    addProject(name, repoPath = null) {
      store.tx(() => store.addProject({ name, repo_path: repoPath, created_at: iso(clock.now()) }));
    },
    events(planId) {
      return store.listEvents({ ...(planId !== undefined ? { planId } : {}), limit: 100_000 });
    },
    eventTypesSince(sinceId) {
      return store.listEvents({ since: sinceId, limit: 100_000 }).map((e) => e.type);
    },
    step(stepId) {
      const s = store.getStep(stepId);
      if (!s) throw new Error(`test fixture: no step ${stepId}`);
      return s;
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
