import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PINNED_GIT_CONFIG } from "./git.js";
import { privateConfig } from "./worktree.js";

describe("privateConfig", () => {
  it("is a config git reads: copied settings, the pinned ones, and no program", () => {
    const dir = mkdtempSync(join(tmpdir(), "ratchet-private-config-"));
    try {
      const file = join(dir, "config");
      writeFileSync(
        file,
        privateConfig([
          ["core.autocrlf", "input"],
          ["extensions.objectformat", "sha256"],
        ]),
      );
      const list = execFileSync("git", ["config", "-f", file, "--list"], { encoding: "utf8" })
        .trim()
        .split("\n");
      expect(list).toEqual(
        expect.arrayContaining([
          "core.repositoryformatversion=1",
          "core.bare=false",
          "core.autocrlf=input",
          "extensions.objectformat=sha256",
          ...PINNED_GIT_CONFIG.map((c) =>
            c.replace(/^(\w+)\.(\w+)=/, (_m, s: string, k: string) => `${s}.${k.toLowerCase()}=`),
          ),
        ]),
      );
      expect(list.some((l) => /filter\.|textconv|\.command=|external=/.test(l))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
