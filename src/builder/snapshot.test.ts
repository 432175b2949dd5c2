/** The code-folder snapshot save-back writes from: regular files only, bounded, verified after a run. */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { notRun } from "../workflow/index.js";
import { RanCode, snapshotCode } from "./snapshot.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function folder(files: Record<string, string> = {}): string {
  const d = mkdtempSync(join(tmpdir(), "ratchet-snapshot-"));
  dirs.push(d);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(d, name), text);
  return d;
}
const limits = { fileMaxBytes: 100, maxFiles: 3, totalMaxBytes: 150 };
const refusal = (s: ReturnType<typeof snapshotCode>) => (s.ok ? null : s.refusal);

describe("snapshotCode", () => {
  it("reads the top-level regular files with their sha256, leaving out the helper, fix-diffs/, dot files and folders", () => {
    const d = folder({
      "main.py": "print(1)\n",
      "util.py": "X = 1\n",
      "ratchet_tools.py": "h",
      ".env": "S=1",
    });
    mkdirSync(join(d, "fix-diffs"));
    mkdirSync(join(d, "sub"));
    const s = snapshotCode(d, limits);
    expect(s.ok && s.files.map((f) => f.name)).toEqual(["main.py", "util.py"]);
    expect(s.ok && s.files[0]?.sha256).toBe(createHash("sha256").update("print(1)\n").digest("hex"));
    expect(s.ok && s.files[0]?.bytes.toString()).toBe("print(1)\n");
  });

  it("refuses a symbolic link (even to a file inside), a FIFO and a device, naming the file", () => {
    const a = folder({ "main.py": "x\n" });
    symlinkSync(join(a, "main.py"), join(a, "extra.py"));
    expect(refusal(snapshotCode(a, limits))).toBe(
      "code/extra.py is a symbolic link: only regular files are saved",
    );
    const b = folder({ "main.py": "x\n" });
    execFileSync("mkfifo", [join(b, "pipe.py")]);
    expect(refusal(snapshotCode(b, limits))).toBe("code/pipe.py is a FIFO: only regular files are saved");
    if (process.getuid?.() === 0) {
      const c = folder({ "main.py": "x\n" });
      execFileSync("mknod", [join(c, "null.py"), "c", "1", "3"]);
      expect(refusal(snapshotCode(c, limits))).toBe("code/null.py is a device: only regular files are saved");
    }
  });

  it("refuses a file, a count or a total over its limit", () => {
    expect(refusal(snapshotCode(folder({ "main.py": "x".repeat(101) }), limits))).toBe(
      "code/main.py is 101 bytes, over the 100-byte limit of a saved file",
    );
    expect(refusal(snapshotCode(folder({ a: "1", b: "2", c: "3", d: "4" }), limits))).toBe(
      "code/ holds more than 3 files",
    );
    expect(refusal(snapshotCode(folder({ a: "x".repeat(80), b: "x".repeat(80) }), limits))).toBe(
      "code/ holds more than 150 bytes",
    );
  });

  it("a missing folder has no files", () => {
    expect(snapshotCode(join(folder(), "nope"), limits)).toEqual({ ok: true, files: [] });
  });
});

describe("RanCode", () => {
  const passed = { ...notRun("passed", ""), outcome: "passed" as const, error: null, output: "ok\n" };

  it("keeps what the run started from, and fails a run that changed its code", async () => {
    const d = folder({ "main.py": "v1\n" });
    const ran = new RanCode(d);
    const r = await ran.around(async () => {
      writeFileSync(join(d, "main.py"), "v2\n");
      return passed;
    });
    expect(r.outcome).toBe("script_failed");
    expect(r.output).toMatch(/^ok\ncode\/main\.py changed while the script ran/);
    expect(refusal(ran.last as never)).toMatch(/^code\/main\.py changed while the script ran/);
  });

  it("leaves out what a run created while it stays as the run left it; keeps it once the agent rewrites it", async () => {
    const d = folder({ "main.py": "v1\n" });
    const ran = new RanCode(d);
    await ran.around(async () => {
      writeFileSync(join(d, "state.json"), "{}");
      symlinkSync("/etc/passwd", join(d, "link.txt"));
      return passed;
    });
    const second = await ran.around(async () => passed);
    expect(second.outcome).toBe("passed");
    const last = ran.last;
    expect(last?.ok && last.files.map((f) => f.name)).toEqual(["main.py"]);
    // The agent writes state.json itself (write + rename: a new file): now it is the agent's.
    writeFileSync(join(d, ".tmp"), '{"a":1}');
    execFileSync("mv", [join(d, ".tmp"), join(d, "state.json")]);
    await ran.around(async () => passed);
    const third = ran.last;
    expect(third?.ok && third.files.map((f) => f.name)).toEqual(["main.py", "state.json"]);
  });

  it("a run that writes code (a module, an extension module, __pycache__/) fails, and the next run is refused", async () => {
    const d = folder({ "main.py": "import helper\n", "helper.py": "X = 1\n" });
    const ran = new RanCode(d);
    const first = await ran.around(async () => {
      writeFileSync(join(d, "helper.so"), "ELF");
      mkdirSync(join(d, "__pycache__"));
      return passed;
    });
    expect(first.outcome).toBe("script_failed");
    expect(first.error).toMatch(/code\/helper\.so was written by a run of the script/);
    expect(first.error).toMatch(/code\/__pycache__ was written by a run of the script/);
    let called = false;
    const second = await ran.around(async () => {
      called = true;
      return passed;
    });
    expect(called).toBe(false);
    expect(second.error).toMatch(
      /was written by a run of the script: code a run writes is never run or saved; the script was not run/,
    );
  });

  it("does not run a folder it cannot save", async () => {
    const d = folder({ "main.py": "v1\n" });
    symlinkSync("/etc/passwd", join(d, "extra.py"));
    let called = false;
    const r = await new RanCode(d).around(async () => {
      called = true;
      return passed;
    });
    expect(called).toBe(false);
    expect(r.error).toBe(
      "code/extra.py is a symbolic link: only regular files are saved; the script was not run",
    );
  });
});
