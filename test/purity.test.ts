// The deterministic core does no I/O: these files import no `node:*` module, no driver, no
// network, and never read the clock. Time and ids come in as arguments (STYLE.md rule 2).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const PURE = [
  "src/core/errors.ts",
  "src/core/limits.ts",
  "src/core/truncate.ts",
  "src/core/redact.ts",
  "src/core/schema.ts",
  "src/ledger/states.ts",
  "src/ledger/rollup.ts",
  "src/ledger/ids.ts",
  "src/ledger/metrics.ts",
  "src/workflow/modes.ts",
  "src/workflow/jsonpath.ts",
  "src/workflow/validation-checks.ts",
  "src/workflow/order.ts",
  "src/workflow/outcomes.ts",
  "src/bridge/json-schema.ts",
  "src/bridge/names.ts",
  "src/bridge/mcp-result.ts",
  "src/bridge/api-spec.ts",
  "src/bridge/errors.ts",
  "src/model/no-progress.ts",
  "src/model/errors.ts",
  "src/model/messages.ts",
  "src/runner/guard.ts",
  "src/runner/score.ts",
  "src/runner/dod-summary.ts",
  "src/runner/dod-normalise.ts",
  "src/builder/prompt.ts",
  "src/builder/text.ts",
  "src/threads/states.ts",
  "src/threads/policy.ts",
  "src/threads/events.ts",
  "src/threads/limits.ts",
  "src/provenance/reasons/text.ts",
  "src/provenance/reasons/rules.ts",
  "src/provenance/reasons/fill-input.ts",
  "src/threads/orchestrator-default.ts",
  "src/threads/script-names.ts",
  "src/threads/llm-shapes.ts",
  "src/threads/outcome.ts",
];

const FORBIDDEN: [RegExp, string][] = [
  [/from\s+["']node:/, "imports a node: module"],
  [/from\s+["'](fs|path|os|child_process|http|https|net|crypto)["']/, "imports a Node built-in"],
  [/from\s+["']better-sqlite3["']/, "imports the SQLite driver"],
  [/\bDate\.now\(/, "reads the clock"],
  [/\bnew Date\(\)/, "reads the clock"],
  [/\bfetch\(/, "uses the network"],
  [/\bprocess\./, "reads the process"],
  [/\bMath\.random\(/, "uses randomness"],
];

describe("pure modules do no I/O", () => {
  for (const file of PURE) {
    it(file, () => {
      const path = join(process.cwd(), file);
      expect(existsSync(path), `${file} is listed as pure but does not exist`).toBe(true);
      const text = readFileSync(path, "utf8");
      const problems = FORBIDDEN.filter(([re]) => re.test(text)).map(([, why]) => why);
      expect(problems, `${file} ${problems.join(", ")}`).toEqual([]);
    });
  }
});
