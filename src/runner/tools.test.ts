import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { overwriteFile } from "./tools.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("overwriteFile (write_file / edit_file without the truncate-to-zero flush)", () => {
  it("leaves exactly the new bytes: shorter, longer, empty, new, multi-byte", () => {
    const dir = mkdtempSync(join(tmpdir(), "ratchet-overwrite-"));
    dirs.push(dir);
    const f = join(dir, "a.sh");
    writeFileSync(f, "a much longer first version of the file\n", { mode: 0o755 });
    for (const text of ["short\n", "now longer than before, much longer\n", "", "ünïcødé ✓\n"]) {
      overwriteFile(f, text);
      expect(readFileSync(f, "utf8")).toBe(text);
    }
    expect(statSync(f).mode & 0o777).toBe(0o755); // an existing file keeps its mode, as with writeFileSync
    overwriteFile(join(dir, "new.txt"), "fresh\n");
    expect(readFileSync(join(dir, "new.txt"), "utf8")).toBe("fresh\n");
  });
});
