/**
 * The worktree's state as a patch: computed from git (`git diff --binary HEAD -- <allowlist>`,
 * new files included through intent-to-add), never from what the model says; restoring the
 * worktree to a patch; pristine protected paths. Every call goes through the worktree's
 * {@link PinnedRepo} (Ratchet's private git dir and index), never through its `.git` file.
 *
 * A {@link WorktreeView} taken when the worktree was made (before any command ran) spares the
 * rounds the git processes whose answer it already knows: which allowlisted files git tracks
 * (so `ls-files --others` runs only when a file it has not seen appears) and the pristine bytes
 * of the protected paths (so `git status` runs only when they differ). Anything it cannot tell
 * for certain (too many files, a symlinked folder, a file type it does not know) goes to git.
 */

/** Files walked at most under the allowlist before the view gives up and asks git. */
const VIEW_MAX_FILES = 2000;
/** Bytes of protected files the view keeps at most (beyond: `git status` every round). */
const VIEW_MAX_PROTECTED_BYTES = 1024 * 1024;

/** A file, symlink or folder entry found by {@link walk}: its lstat and its relative path. */
interface Found {
  rel: string;
  st: Stats;
}

/**
 * Every file and symlink under `entries` of `root` (symlinks never followed). `undefined` when
 * the answer is not certain: more than `max` entries, a path component that is not a real folder,
 * or a file that is neither regular nor a symlink.
 */
function walk(root: string, entries: readonly string[], max: number): Found[] | undefined {
  const out: Found[] = [];
  const lst = (rel: string) => lstatSync(join(root, rel), { throwIfNoEntry: false });
  const visit = (rel: string, st: Stats): boolean => {
    if (st.isFile() || st.isSymbolicLink()) {
      out.push({ rel, st });
      return out.length <= max;
    }
    if (!st.isDirectory()) return false;
    let names: Dirent[];
    try {
      names = readdirSync(join(root, rel), { withFileTypes: true });
    } catch {
      return false;
    }
    for (const d of names) {
      const child = `${rel}/${d.name}`;
      const cst = lst(child);
      if (cst === undefined || !visit(child, cst)) return false;
    }
    return true;
  };
  for (const entry of new Set(entries)) {
    const parts = entry.split("/");
    let absent = false;
    for (let i = 1; i < parts.length && !absent; i++) {
      const st = lst(parts.slice(0, i).join("/"));
      if (st === undefined) absent = true;
      else if (!st.isDirectory()) return undefined;
    }
    if (absent) continue;
    const st = lst(entry);
    if (st !== undefined && !visit(entry, st)) return undefined;
  }
  return out;
}

/** The bytes git would compare for a file or symlink. */
function contentOf(root: string, f: Found): Buffer {
  const abs = join(root, f.rel);
  return f.st.isSymbolicLink() ? Buffer.from(readlinkSync(abs)) : readFileSync(abs);
}

/** A protected file as checked out: mode (type and permissions) and bytes. */
interface Pristine {
  mode: number;
  data: Buffer;
}

/**
 * What Ratchet saw of a fresh worktree before any command ran in it (see the module comment).
 * One per worktree; {@link restoreTo} tells it the index went back to HEAD.
 */
export class WorktreeView {
  private known: Set<string>;
  private protectedHash: string | undefined;

  private constructor(
    private readonly root: string,
    private readonly tracked: ReadonlySet<string> | undefined,
    private readonly pristine: ReadonlyMap<string, Pristine> | undefined,
  ) {
    this.known = new Set(tracked);
    if (pristine) {
      const lines = [...pristine].map(
        ([p, e]) => `${e.mode.toString(8)} ${p} ${hashText(e.data.toString("latin1"))}`,
      );
      this.protectedHash = hashText(lines.sort().join("\n"));
    }
  }

  /** Walks the allowlist and the protected paths of `root`, which git has just checked out. */
  static capture(
    root: string,
    allowlist: readonly string[],
    protectedPaths: readonly string[],
  ): WorktreeView {
    const allowed = walk(root, allowlist, VIEW_MAX_FILES);
    const prot = protectedPaths.length > 0 ? walk(root, protectedPaths, VIEW_MAX_FILES) : [];
    let pristine: Map<string, Pristine> | undefined;
    if (prot !== undefined && prot.reduce((n, f) => n + f.st.size, 0) <= VIEW_MAX_PROTECTED_BYTES) {
      pristine = new Map(prot.map((f) => [f.rel, { mode: f.st.mode, data: contentOf(root, f) }]));
    }
    return new WorktreeView(root, allowed && new Set(allowed.map((f) => f.rel)), pristine);
  }

  /** True when every file under the allowlist is one git tracks (none for `ls-files --others`). */
  allTracked(allowlist: readonly string[]): boolean {
    if (this.tracked === undefined) return false;
    const now = walk(this.root, allowlist, VIEW_MAX_FILES);
    return now?.every((f) => this.known.has(f.rel)) ?? false;
  }

  /** Files now in the private index as intent-to-add. */
  added(paths: readonly string[]): void {
    for (const p of paths) this.known.add(p);
  }

  /** The private index is HEAD's again (intent-to-add entries gone). */
  indexReset(): void {
    this.known = new Set(this.tracked);
  }

  /** True when the protected paths hold exactly their pristine files (type, mode, bytes). */
  protectedPristine(protectedPaths: readonly string[]): boolean {
    if (this.pristine === undefined) return false;
    const now = walk(this.root, protectedPaths, this.pristine.size);
    if (now === undefined || now.length !== this.pristine.size) return false;
    return now.every((f) => {
      const p = this.pristine?.get(f.rel);
      return (
        p !== undefined &&
        p.mode === f.st.mode &&
        p.data.length === f.st.size &&
        p.data.equals(contentOf(this.root, f))
      );
    });
  }

  /**
   * What the allowlist's diff against HEAD is a function of, as one hash, or `undefined` when the
   * view cannot tell: every file under the allowlist (path, what git records of its mode: symlink,
   * executable or not; its bytes), when each is one git already diffs (tracked or added) and no
   * `.gitattributes` sits in the folder of any of them or of any entry, or above (so no filter,
   * eol or diff attribute), and `raw` (the copied settings convert nothing:
   * {@link rawDiffSettings}). Then two equal hashes mean the same diff and two different ones a
   * different diff (the patch gives back the bytes and modes), so a round whose hash differs from
   * the last one's cannot be "no progress", whatever git answers for it.
   */
  fingerprint(allowlist: readonly string[], raw: boolean): string | undefined {
    if (!raw || this.tracked === undefined) return undefined;
    const now = walk(this.root, allowlist, VIEW_MAX_FILES);
    if (now === undefined) return undefined;
    const dirs = new Set<string>([""]);
    for (const p of [...allowlist, ...now.map((f) => f.rel)]) {
      const parts = p.split("/");
      for (let i = 1; i < parts.length; i++) dirs.add(parts.slice(0, i).join("/"));
    }
    for (const d of dirs) {
      if (lstatSync(join(this.root, d, ".gitattributes"), { throwIfNoEntry: false }) !== undefined)
        return undefined;
    }
    const h = createHash("sha256");
    let bytes = 0;
    for (const f of now.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0))) {
      if (!this.known.has(f.rel)) return undefined;
      bytes += f.st.size;
      if (bytes > VIEW_MAX_PROTECTED_BYTES) return undefined;
      const kind = f.st.isSymbolicLink() ? "l" : f.st.mode & 0o100 ? "x" : "f";
      h.update(`${f.rel}\0${kind}\0${f.st.size}\0`);
      h.update(contentOf(this.root, f));
    }
    return h.digest("hex");
  }

  /** The hash of the pristine protected contents, or `undefined` when the view did not keep them. */
  get pristineHash(): string | undefined {
    return this.protectedHash;
  }

  /** Remembers a hash computed by git when the view kept no contents. */
  set pristineHash(hash: string | undefined) {
    this.protectedHash = hash;
  }
}

import { createHash } from "node:crypto";
import { type Dirent, lstatSync, readdirSync, readFileSync, readlinkSync, type Stats } from "node:fs";
import { join } from "node:path";
import { type ProcessRunner, realProcessRunner } from "../exec/index.js";
import { type PinnedRepo, pinnedGit, pinnedGitRun } from "./git.js";
import { inList } from "./spec.js";

/**
 * True when the copied source settings make git compare a file's bytes as they are: no
 * `core.autocrlf` conversion, and file modes and symlinks recorded as they are. Pure.
 */
export function rawDiffSettings(copied: readonly (readonly [string, string])[] | undefined): boolean {
  if (copied === undefined) return false;
  const get = (k: string) => copied.findLast(([key]) => key === k)?.[1]?.toLowerCase();
  const falsy = (v: string | undefined) =>
    v === "" || v === "false" || v === "no" || v === "off" || v === "0";
  const autocrlf = get("core.autocrlf");
  return (
    (autocrlf === undefined || falsy(autocrlf)) &&
    !falsy(get("core.filemode")) &&
    !falsy(get("core.symlinks"))
  );
}

const literal = (paths: readonly string[]) => paths.map((p) => `:(literal)${p}`);

/** The allowlist-scoped diff of the worktree against HEAD (binary-safe; "" when unchanged). */
export async function diffAllowlisted(
  worktree: PinnedRepo,
  allowlist: readonly string[],
  runner: ProcessRunner = realProcessRunner,
  view?: WorktreeView,
): Promise<string> {
  if (!view?.allTracked(allowlist)) {
    const untracked = (
      await pinnedGit(
        ["ls-files", "-z", "--others", "--exclude-standard", "--", ...literal(allowlist)],
        worktree,
        runner,
      )
    )
      .split("\0")
      .filter(Boolean);
    if (untracked.length > 0) await pinnedGit(["add", "-N", "--", ...literal(untracked)], worktree, runner);
    view?.added(untracked);
  }
  return pinnedGit(
    [
      "diff",
      "--binary",
      "--no-color",
      "--no-ext-diff",
      "--no-textconv",
      "--ignore-submodules=all",
      "HEAD",
      "--",
      ...literal(allowlist),
    ],
    worktree,
    runner,
  );
}

/** The paths a patch touches (both sides of `diff --git a/X b/Y`). Pure. */
export function patchPaths(patch: string): string[] {
  const out = new Set<string>();
  for (const m of patch.matchAll(/^diff --git a\/(.+?) b\/(.+)$/gm)) {
    out.add(unquote(m[1] as string));
    out.add(unquote(m[2] as string));
  }
  for (const m of patch.matchAll(/^(?:rename|copy) (?:from|to) (.+)$/gm)) out.add(unquote(m[1] as string));
  return [...out].sort();
}

function unquote(p: string): string {
  return p.startsWith('"') ? (JSON.parse(p) as string).replace(/^[ab]\//, "") : p;
}

/** Paths of the patch outside the allowlist (must be empty before export). Pure. */
export function pathsOutside(patch: string, allowlist: readonly string[]): string[] {
  return patchPaths(patch).filter((p) => !inList(p, allowlist));
}

export function hashText(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 16);
}

/** Puts the worktree back to HEAD in the allowlist, then applies `patch`. */
export async function restoreTo(
  worktree: PinnedRepo,
  allowlist: readonly string[],
  patch: string,
  runner: ProcessRunner = realProcessRunner,
  view?: WorktreeView,
): Promise<void> {
  await pinnedGit(["reset", "-q"], worktree, runner);
  view?.indexReset();
  await pinnedGit(["checkout", "-q", "HEAD", "--", "."], worktree, runner);
  await pinnedGitRun(["clean", "-fdq", "--", ...literal(allowlist)], worktree, runner);
  if (patch !== "")
    await pinnedGit(["apply", "--binary", "--whitespace=nowarn", "-"], worktree, runner, patch);
}

/**
 * Restores protected paths to their HEAD copies (and removes files added under them). Returns the
 * paths that had changed, and a hash of the pristine contents.
 */
export async function restoreProtected(
  worktree: PinnedRepo,
  protectedPaths: readonly string[],
  runner: ProcessRunner = realProcessRunner,
  view?: WorktreeView,
): Promise<{ changed: string[]; hash: string }> {
  if (protectedPaths.length === 0) return { changed: [], hash: "" };
  const known = view?.pristineHash;
  if (known !== undefined && view?.protectedPristine(protectedPaths)) return { changed: [], hash: known };
  const spec = literal(protectedPaths);
  const status = await pinnedGit(
    ["status", "--porcelain=v1", "--untracked-files=all", "--ignore-submodules=all", "--", ...spec],
    worktree,
    runner,
  );
  const changed = status
    .split("\n")
    .filter(Boolean)
    .map((l) => l.slice(3));
  if (changed.length > 0) {
    const tracked = (await pinnedGit(["ls-files", "-z", "--", ...spec], worktree, runner))
      .split("\0")
      .filter(Boolean);
    if (tracked.length > 0)
      await pinnedGit(["checkout", "-q", "HEAD", "--", ...literal(tracked)], worktree, runner);
    await pinnedGitRun(["clean", "-fdq", "--", ...spec], worktree, runner);
  }
  if (known !== undefined) return { changed, hash: known };
  const tree = await pinnedGitRun(["ls-tree", "-r", "HEAD", "--", ...spec], worktree, runner);
  const hash = hashText(tree.stdout);
  if (view) view.pristineHash = hash;
  return { changed, hash };
}
