/**
 * The README's first command ends in `node examples/demo.mjs`: the whole offline tour (ledger,
 * a learned workflow, the Builder, a runner fix, a thread with an approval) must keep passing
 * as the capabilities change. Run as a user would, in a child process.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { expect, it, vi } from "vitest";
import { assertBuilt, ROOT } from "../helpers/cli.js";

vi.setConfig({ testTimeout: 240_000 });

it("npm run demo's tour runs to its end", async () => {
  assertBuilt();
  const child = spawn(process.execPath, [join(ROOT, "examples", "demo.mjs")], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const code = await new Promise<number | null>((resolveExit) => child.on("close", resolveExit));
  expect(code, out.slice(-4000)).toBe(0);
  expect(out).toContain("Demo finished.");
});
