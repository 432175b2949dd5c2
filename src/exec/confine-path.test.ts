import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { confinePath, PathRefused } from "./confine-path.js";

const dir = mkdtempSync(join(tmpdir(), "ratchet-confine-path-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const root = join(dir, "root");
mkdirSync(join(root, "src"), { recursive: true });
mkdirSync(join(root, ".git"), { recursive: true });
writeFileSync(join(root, "src", "a.txt"), "a");
writeFileSync(join(dir, "outside.txt"), "secret");
symlinkSync(dir, join(root, "up"));
symlinkSync(join(root, "src"), join(root, "inner"));
symlinkSync(join(root, "src", "a.txt"), join(root, "alias.txt"));
symlinkSync(join(root, ".git"), join(root, "g"));

const read = { mode: "read" as const, allowAbsolute: true, forbidden: [".git"], rootName: "worktree" };
const write = { ...read, mode: "write" as const };
const refused = (path: string, opts: Parameters<typeof confinePath>[2], message: RegExp) => {
  expect(() => confinePath(root, path, opts)).toThrow(PathRefused);
  expect(() => confinePath(root, path, opts)).toThrow(message);
};

describe("confinePath (one semantics for the runner and the Builder)", () => {
  it("resolves relative paths and absolute paths inside the root", () => {
    expect(confinePath(root, "src/a.txt", read).rel).toBe("src/a.txt");
    expect(confinePath(root, join(root, "src", "a.txt"), read).rel).toBe("src/a.txt");
    expect(confinePath(root, "src/new/b.txt", write).rel).toBe("src/new/b.txt");
  });
  it("refuses empty paths, absolute paths outside (or any, without allowAbsolute) and .. escapes", () => {
    refused("", read, /not a path/);
    refused(join(dir, "outside.txt"), read, /outside the worktree/);
    refused(join(root, "src", "a.txt"), { ...read, allowAbsolute: false }, /relative/);
    refused("../outside.txt", read, /outside the worktree/);
    refused("src/../../outside.txt", write, /outside the worktree/);
  });
  it("follows symbolic links only while they stay inside; never writes through one", () => {
    refused("up/outside.txt", read, /symbolic link/);
    refused("up/new.txt", write, /symlink/);
    expect(confinePath(root, "inner/a.txt", read).rel).toBe("src/a.txt");
    expect(confinePath(root, "alias.txt", read).rel).toBe("src/a.txt");
    refused("alias.txt", write, /is a symbolic link/);
  });
  it("refuses forbidden first segments as given and after resolution", () => {
    refused(".git/config", read, /\.git\//);
    refused("g/config", read, /\.git\//);
    refused("fix-diffs/a.diff", { mode: "write", forbidden: ["fix-diffs"] }, /not yours/);
  });
});
