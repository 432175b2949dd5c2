/**
 * A registered project on a real git repo, analysed by the real node source through the ledger's
 * own moments: the publish baseline (`publish-plan`), an edit of the files, the hand-off and the
 * review refresh when `<plan>-REVIEW.1` starts (`start-step`). What a reason test needs to hold a
 * plan whose changed nodes the analyser found, under the keys it minted.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { applyOp, type Ledger } from "../ledger/index.js";
import { nodeSourceFor } from "../provenance/nodes/index.js";

/** Writes `files` into `repo` and commits them (a fresh repo when `repo` has none). */
export function commitFiles(repo: string, files: Record<string, string>, message = "files"): void {
  const git = (...args: string[]) =>
    execFileSync("git", ["-C", repo, "-c", "user.email=t@t", "-c", "user.name=t", ...args], {
      stdio: "ignore",
    });
  mkdirSync(repo, { recursive: true });
  git("init", "-q");
  writeFiles(repo, files);
  git("add", "-A");
  git("commit", "-qm", message);
}

export function writeFiles(repo: string, files: Record<string, string>): void {
  for (const [p, c] of Object.entries(files)) {
    mkdirSync(dirname(join(repo, p)), { recursive: true });
    writeFileSync(join(repo, p), c);
  }
}

export interface ReviewedPlan {
  planId: string;
  reviewStepId: string;
  /** The key the analyser gave `qualifiedName` (throws when it has none). */
  key(qualifiedName: string): string;
}

/**
 * Registers `project` on `repo` (files committed), publishes a one-step plan for it (baseline run),
 * writes `edits`, completes the step and starts `<plan>-REVIEW.1` (review run).
 */
export async function reviewedPlan(
  ledger: Ledger,
  opts: { project: string; repo: string; files: Record<string, string>; edits: Record<string, string> },
): Promise<ReviewedPlan> {
  const { store } = ledger;
  commitFiles(opts.repo, opts.files);
  if (!store.getProject(opts.project))
    store.tx(() => store.addProject({ name: opts.project, repo_path: opts.repo, created_at: ledger.now() }));
  const pub = await applyOp(ledger, "publish-plan", {
    goal: `change ${opts.project}`,
    steps: [{ title: "a", type: "THINKING" }],
    project: opts.project,
  });
  if (!pub.ok) throw new Error(`reviewedPlan: publish failed: ${pub.error?.message}`);
  const planId = String(pub.result?.plan_id);
  const a = String((pub.result?.step_ids as string[] | undefined)?.[0]);
  writeFiles(opts.repo, opts.edits);
  ledger.start({ step_id: a });
  const done = ledger.complete({ step_id: a });
  const reviewStepId = String(done.review_child_step_id);
  const started = await applyOp(ledger, "start-step", { step_id: reviewStepId });
  if (!started.ok) throw new Error(`reviewedPlan: start failed: ${started.error?.message}`);
  const nodes = nodeSourceFor(store);
  return {
    planId,
    reviewStepId,
    key(qn) {
      const k = nodes.resolve(opts.project, qn)?.node_key;
      if (!k) throw new Error(`reviewedPlan: no node ${qn}`);
      return k;
    },
  };
}
