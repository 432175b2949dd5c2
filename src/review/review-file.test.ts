import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isRatchetError } from "../core/index.js";
import { languageOf, reviewFile } from "./index.js";

const dir = mkdtempSync(join(tmpdir(), "ratchet-review-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

describe("reviewFile", () => {
  it("takes the language from the extension", async () => {
    expect(languageOf("main.py")).toBe("python");
    expect(languageOf("x/main.mjs")).toBe("javascript");
    expect(languageOf("MAIN.JS")).toBe("javascript");
    expect((await reviewFile(file("a.py", 'open("x", "w")\n'))).language).toBe("python");
    expect(
      (await reviewFile(file("a.mjs", 'import fs from "fs";\nfs.writeFileSync("x", "");\n'))).blocking,
    ).toBe(1);
  });

  it("passes the declared variables on", async () => {
    const p = file("d.py", 'import os\nx = os.environ.get("VAR_A", "1")\n');
    expect((await reviewFile(p)).blocking).toBe(1);
    expect((await reviewFile(p, { declared: ["VAR_B"] })).blocking).toBe(0);
  });

  it("refuses an unknown extension with invalid_value naming the file", async () => {
    const p = file("notes.txt", "hello");
    await expect(reviewFile(p)).rejects.toSatisfy(
      (e) => isRatchetError(e, "invalid_value") && e.message.includes(p),
    );
  });

  it("refuses a missing file or a folder with unreadable_input naming it", async () => {
    const missing = join(dir, "missing.py");
    await expect(reviewFile(missing)).rejects.toSatisfy(
      (e) => isRatchetError(e, "unreadable_input") && e.message.includes(missing) && e.exitStatus === 2,
    );
    const folder = join(dir, "folder.py");
    mkdirSync(folder);
    await expect(reviewFile(folder)).rejects.toSatisfy((e) => isRatchetError(e, "unreadable_input"));
  });
});
