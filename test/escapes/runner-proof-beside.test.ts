/**
 * The after-snapshot's git calls (`show-ref`, `status`) run beside the proof's DoD where the
 * proof's commands cannot write anything those calls read (confined, no writable folder reaching
 * the source). A DoD that behaves only in the proof (a fresh tree: no file the rounds left) tries
 * to change the source there, late, after those calls would have read it:
 *  - confined, its writes are refused, so the source is unchanged and the task is proven;
 *  - unconfined, or with a writable folder inside the source's git folder, the snapshot waits for
 *    the proof and the change is caught (`source_changed`).
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ProcessRunner } from "../../src/exec/index.js";
import { realProcessRunner } from "../../src/exec/index.js";
import { parseTaskSpec, runTask } from "../../src/runner/index.js";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { scriptedModelClient } from "../../src/testing/scripted-model-client.js";
import { CALC_FIXED_LINE, calcSpec, git, makeRepo, type TestRepo } from "../helpers/runner-repo.js";

vi.setConfig({ testTimeout: 90_000 });

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The rounds fix calc.sh and leave `rounds-marker` (untracked, not in the patch) behind. */
const TURNS = [
  {
    tool_calls: [
      { name: "write_file", arguments: { path: "calc.sh", content: `#!/bin/bash\n${CALC_FIXED_LINE}\n` } },
    ],
  },
  { tool_calls: [{ name: "run_command", arguments: { command: "touch rounds-marker" } }] },
  { tool_calls: [{ name: "finish", arguments: { summary: "fixed" } }] },
];

/**
 * The DoD: the calc tests; when they pass on a tree without `rounds-marker` (only the proof's),
 * it waits (so calls started beside it are long over) and then changes the source `src`:
 * a new branch, a ref file written directly into `refDir`, the README, an untracked file.
 */
function dod(src: string, refDir: string): string {
  const late = [
    "sleep 0.5",
    `git -C ${src} branch sneaky 2>/dev/null && echo WROTE-BRANCH`,
    `git rev-parse HEAD > ${refDir}/sneaky2 2>/dev/null && echo WROTE-REF`,
    `echo more >> ${src}/README.md 2>/dev/null && echo WROTE-README`,
    `touch ${src}/late.txt 2>/dev/null && echo WROTE-FILE`,
  ].join("; ");
  return `bash test_calc.sh && { [ -f rounds-marker ] || { ${late}; true; }; }`;
}

/** A process runner that records, in order, when each call starts and ends. */
function recording(): { runner: ProcessRunner; log: string[] } {
  const log: string[] = [];
  const runner: ProcessRunner = {
    async run(req) {
      const name = req.args?.includes("show-ref")
        ? "show-ref"
        : req.args?.some((a) => a.includes("test_calc.sh"))
          ? "dod"
          : req.command;
      log.push(`start ${name}`);
      try {
        return await realProcessRunner.run(req);
      } finally {
        log.push(`end ${name}`);
      }
    },
  };
  return { runner, log };
}

async function runIt(r: TestRepo, over: Record<string, unknown>, runner?: ProcessRunner) {
  const model = await startScriptedModel({ script: { turns: TURNS } });
  cleanups.push(() => model.close());
  const spec = parseTaskSpec(calcSpec(r, { max_rounds: 1, ...over }));
  const client = scriptedModelClient(model, { maxAttempts: 1 });
  const result = await runTask(spec, { client, ...(runner ? { runner } : {}) });
  const events = readFileSync(join(r.out, "fix-calc.events.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { result, events, verifier: readFileSync(join(r.out, "fix-calc.verifier.log"), "utf8") };
}

describe("escape: the after-snapshot taken beside the proof's DoD", () => {
  it("confined: the proof's late writes to the source are refused, and the task is proven", async () => {
    const r = makeRepo();
    cleanups.push(() => r.remove());
    const { runner, log } = recording();
    const { result, events, verifier } = await runIt(
      r,
      {
        definition_of_done: {
          command: dod(r.repo, join(r.repo, ".git", "refs", "heads")),
          assertion: "exit_code == 0",
        },
      },
      runner,
    );
    const sandbox = events.find((e) => e.type === "command_sandbox");
    if (sandbox?.protection !== "landlock") {
      console.warn(`runner commands not confined here: ${JSON.stringify(sandbox)}`);
      return;
    }
    // the shortcut was taken: the after-snapshot's show-ref started while the proof's DoD ran
    const proofStart = log.lastIndexOf("start dod");
    expect(log.lastIndexOf("start show-ref")).toBeGreaterThan(proofStart);
    expect(log.lastIndexOf("start show-ref")).toBeLessThan(log.lastIndexOf("end dod"));
    expect(verifier).not.toMatch(/WROTE/);
    expect(result.status).toBe("passed");
    expect(result.source_unchanged).toBe(true);
    expect(git(r.repo, "branch", "--list").trim()).toBe("* main");
    expect(git(r.repo, "status", "--porcelain")).toBe("");
  });

  it("unconfined: the snapshot waits for the proof and its late writes are caught", async () => {
    const r = makeRepo();
    cleanups.push(() => r.remove());
    process.env.RATCHET_SANDBOX = "off";
    try {
      const { runner, log } = recording();
      const { result, verifier } = await runIt(
        r,
        {
          definition_of_done: {
            command: dod(r.repo, join(r.repo, ".git", "refs", "heads")),
            assertion: "exit_code == 0",
          },
        },
        runner,
      );
      expect(verifier).toMatch(/WROTE-BRANCH/);
      expect(log.lastIndexOf("start show-ref")).toBeGreaterThan(log.lastIndexOf("end dod"));
      expect(result.status).toBe("failed");
      expect(result.stop_reason).toBe("source_changed");
      expect(result.source_changes).toEqual(expect.arrayContaining(["refs", "status"]));
    } finally {
      delete process.env.RATCHET_SANDBOX;
    }
  });

  it("confined, with a writable folder inside the source's git folder: the snapshot waits and the ref is caught", async () => {
    // a repository whose git folder lives outside its working tree, so a writable_paths entry
    // may lie inside it (one inside the working tree is refused by the spec)
    const r = makeRepo();
    cleanups.push(() => r.remove());
    const gitDir = join(r.root, "repo.git");
    const repo = join(r.root, "sep");
    git(r.root, "clone", "-q", "--separate-git-dir", gitDir, r.repo, repo);
    const refDir = join(gitDir, "refs", "heads");
    mkdirSync(refDir, { recursive: true });
    const sep: TestRepo = { ...r, repo };
    const { runner, log } = recording();
    const { result, events, verifier } = await runIt(
      sep,
      {
        writable_paths: [refDir],
        definition_of_done: { command: dod(repo, refDir), assertion: "exit_code == 0" },
      },
      runner,
    );
    const sandbox = events.find((e) => e.type === "command_sandbox");
    if (sandbox?.protection !== "landlock") {
      console.warn(`runner commands not confined here: ${JSON.stringify(sandbox)}`);
      return;
    }
    // the branch through git is refused (git locks packed-refs/logs outside refDir); the ref
    // file written straight into the writable folder is not
    expect(verifier).toMatch(/WROTE-REF/);
    expect(existsSync(join(refDir, "sneaky2"))).toBe(true);
    expect(log.lastIndexOf("start show-ref")).toBeGreaterThan(log.lastIndexOf("end dod"));
    expect(result.status).toBe("failed");
    expect(result.stop_reason).toBe("source_changed");
    expect(result.source_changes).toContain("refs");
  });
});
