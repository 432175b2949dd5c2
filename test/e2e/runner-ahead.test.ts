/**
 * A round's diff may run while the next round's model call is made (the round was kept and its
 * fingerprint, the allowlist's bytes and modes, differs from the last round's, so it cannot be
 * "no progress"); tools and the DoD wait for it. Attacks: a DoD that edits the allowlisted file
 * behind the runner's back still shows in every round's patch; a model that repeats itself still
 * stops with `no_progress`; so does one whose two different files git diffs alike (a
 * `.gitattributes` that normalises line ends), where the fingerprint cannot tell.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseTaskSpec, runTask } from "../../src/runner/index.js";
import { startScriptedModel } from "../../src/testing/scripted-model.js";
import { scriptedModelClient } from "../../src/testing/scripted-model-client.js";
import { CALC_FIXED_LINE, calcSpec, git, makeRepo, type TestRepo } from "../helpers/runner-repo.js";

vi.setConfig({ testTimeout: 60_000 });

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function repo(): TestRepo {
  const r = makeRepo();
  cleanups.push(() => r.remove());
  return r;
}

/** One round: write calc.sh with `content`, finish. */
const round = (content: string) => [
  { tool_calls: [{ name: "write_file", arguments: { path: "calc.sh", content } }] },
  { tool_calls: [{ name: "finish", arguments: { summary: "tried" } }] },
];

async function run(r: TestRepo, turns: Record<string, unknown>[], over: Record<string, unknown>) {
  const model = await startScriptedModel({ script: { turns } });
  cleanups.push(() => model.close());
  const spec = parseTaskSpec(calcSpec(r, over));
  const result = await runTask(spec, { client: scriptedModelClient(model, { maxAttempts: 1 }) });
  const rounds = readFileSync(join(r.out, "fix-calc.rounds.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { round: number; patch_hash: string; changed_files: string[] });
  return { result, rounds, model };
}

describe("runner: a round's diff beside the next round's model call", () => {
  it("a DoD that edits the allowlisted file behind the runner's back shows in every round's patch", async () => {
    const r = repo();
    const wrong = (k: number) => `#!/bin/bash\necho $(( $1 * $2 )) # try ${k}\n`;
    const { result, rounds } = await run(
      r,
      [...round(wrong(1)), ...round(wrong(2)), ...round(`#!/bin/bash\n${CALC_FIXED_LINE}\n`)],
      {
        max_rounds: 3,
        definition_of_done: {
          command: 'echo "# the DoD was here $(date +%N)" >> calc.sh; bash test_calc.sh',
          assertion: "exit_code == 0",
        },
      },
    );
    expect(result.status).toBe("passed");
    expect(rounds.map((x) => x.round)).toEqual([1, 2, 3]);
    expect(new Set(rounds.map((x) => x.patch_hash)).size).toBe(3);
    for (const x of rounds) expect(x.changed_files).toEqual(["calc.sh"]);
    const patch = readFileSync(join(r.out, "fix-calc.patch"), "utf8");
    expect(patch).toContain("+# the DoD was here");
    expect(patch).toContain(`+${CALC_FIXED_LINE}`);
  });

  it("a model that writes the same file twice still stops with no_progress", async () => {
    const r = repo();
    const same = "#!/bin/bash\necho $(( $1 * $2 ))\n";
    const { result, rounds, model } = await run(r, [...round(same), ...round(same), ...round(same)], {
      max_rounds: 3,
    });
    expect(result.stop_reason).toBe("no_progress");
    expect(result.rounds).toBe(2);
    expect(rounds).toHaveLength(2);
    // the third round's model call was never made
    expect(model.requests().length).toBe(4);
  });

  it("two files git diffs alike (line ends normalised by .gitattributes) still stop with no_progress", async () => {
    const r = repo();
    writeFileSync(join(r.repo, ".gitattributes"), "calc.sh text\n");
    git(r.repo, "add", ".gitattributes");
    git(r.repo, "commit", "-qm", "attributes");
    const lf = "#!/bin/bash\necho $(( $1 * $2 ))\n";
    const crlf = lf.replaceAll("\n", "\r\n");
    const { result, rounds } = await run(r, [...round(lf), ...round(crlf), ...round(lf)], { max_rounds: 3 });
    expect(rounds[0]?.patch_hash).toBe(rounds[1]?.patch_hash);
    expect(result.stop_reason).toBe("no_progress");
    expect(result.rounds).toBe(2);
  });
});
