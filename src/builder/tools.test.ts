/** The confined file tools: nothing outside the folder is read or written, whatever the path. */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { repairFeedback } from "./prompt.js";
import { fileTools } from "./tools.js";

function folder() {
  const dir = mkdtempSync(join(tmpdir(), "ratchet-builder-tools-"));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const code = join(dir, "code");
  mkdirSync(code);
  writeFileSync(join(dir, "secret.txt"), "outside");
  const tools = new Map(fileTools(code, { forbidden: ["fix-diffs"] }).map((t) => [t.def.name, t]));
  const call = (name: string, args: unknown) =>
    (tools.get(name) as { execute: (a: unknown, c: unknown) => Promise<unknown> }).execute(args, {
      signal: new AbortController().signal,
      callId: "c1",
    });
  return { dir, code, call };
}

describe("builder file tools", () => {
  it("read, write and edit inside the folder", async () => {
    const { code, call } = folder();
    await call("write_file", { path: "main.py", content: "print('a')\nprint('b')\n" });
    await call("edit_file", { path: "main.py", old_text: "print('b')", new_text: "print('c')" });
    expect(readFileSync(join(code, "main.py"), "utf8")).toBe("print('a')\nprint('c')\n");
    expect(await call("read_file", { path: "main.py", start_line: 2 })).toContain("print('c')");
    expect(await call("list_files", {})).toBe("main.py");
  });

  it("refuses absolute paths, .., symbolic links out, and fix-diffs/", async () => {
    const { dir, code, call } = folder();
    symlinkSync(dir, join(code, "up"));
    await expect(call("read_file", { path: join(dir, "secret.txt") })).rejects.toThrow(/outside/);
    await expect(call("read_file", { path: "../secret.txt" })).rejects.toThrow(/outside/);
    await expect(call("read_file", { path: "up/secret.txt" })).rejects.toThrow(/symbolic link/);
    await expect(call("write_file", { path: "up/new.txt", content: "x" })).rejects.toThrow(/symbolic link/);
    await expect(call("write_file", { path: "fix-diffs/a.diff", content: "x" })).rejects.toThrow(/not yours/);
    await expect(call("edit_file", { path: "main.py", old_text: "", new_text: "x" })).rejects.toThrow();
    expect(readFileSync(join(dir, "secret.txt"), "utf8")).toBe("outside");
  });
});

describe("repair feedback (pure)", () => {
  it("holds the task, the pointer, the findings with declared variables, the output head/tail and the counter", () => {
    const text = repairFeedback(
      { stepId: "s", description: "do it", declared: ["VAR_A"], outputFiles: ["o.json"], dependencies: [] },
      {
        attempt: 2,
        maxAttempts: 3,
        scriptPath: "execution/r/s/code/main.py",
        findings: [{ line: 4, rule: "R2", message: "fallback for VAR_A", fix: "os.environ['VAR_A']" }],
        lastOutput: `${"x".repeat(5000)}TRACEBACK-END`,
        lastExitCode: 1,
      },
    );
    expect(text).toContain("Repair attempt 2 of 3");
    expect(text).toContain("execution/r/s/code/main.py");
    expect(text).toContain("line 4 [R2] fallback for VAR_A");
    expect(text).toContain("Declared variables: VAR_A");
    expect(text).toContain("exit code 1");
    expect(text).toContain("chars omitted");
    expect(text).toContain("TRACEBACK-END");
  });
});
