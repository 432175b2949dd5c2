// Forward references: names a function body uses that the module defines further down.
import { describe, expect, it } from "vitest";
import { type Kit, makeKit } from "../testing/threads-kit.js";
import { forwardNames, moduleNames, withForwardNames } from "./script-names.js";
import { montyVm } from "./vm.js";

const LATER = [
  "# helpers below their callers",
  "def run():",
  "    return helper(2) + LIMIT + len(TEXT)",
  "",
  'TEXT = """',
  "def not_a_function():",
  '"""',
  "def helper(x):",
  "    return x * 10",
  "LIMIT = 1",
  'FINAL({"outcome": "completed", "response": str(run())})',
  "",
].join("\n");

describe("forward names", () => {
  it("finds module-level names used above their definition, ignoring text inside strings", () => {
    expect(moduleNames(LATER).map((n) => [n.name, n.kind])).toEqual([
      ["run", "def"],
      ["TEXT", "assign"],
      ["helper", "def"],
      ["LIMIT", "assign"],
    ]);
    expect(forwardNames(LATER)).toEqual(["TEXT", "helper", "LIMIT"]);
    // The declaration rides on the first line (a comment), so line numbers stay the script's own.
    const out = withForwardNames(LATER);
    expect(out.split("\n")[0]).toBe(
      "TEXT = None; helper = None; LIMIT = None  # helpers below their callers",
    );
    expect(out.split("\n").length).toBe(LATER.split("\n").length);
    expect(withForwardNames("x = 1\n")).toBe("x = 1\n");
  });

  let kit: Kit | undefined;
  it("a stored orchestrator calling a helper defined further down runs (no NameError)", async () => {
    kit = await makeKit({ turns: [] });
    try {
      kit.svc.versions.save(LATER, montyVm);
      const r = await kit.svc.start("forward references");
      expect(r.thread.reason ?? "").not.toContain("NameError");
      expect(r.outcome).toBe("completed");
      expect(r.thread.final_result).toBe("44");
      // Mutual recursion: one of the two is always "further down".
      kit.svc.versions.save(
        "def even(n):\n    return True if n == 0 else odd(n - 1)\n\ndef odd(n):\n    return False if n == 0 else even(n - 1)\n\nFINAL(str(even(10)))\n",
        montyVm,
      );
      const m = await kit.svc.start("mutual recursion");
      expect(m.thread.final_result).toBe("True");
    } finally {
      await kit.close();
    }
  });
});
