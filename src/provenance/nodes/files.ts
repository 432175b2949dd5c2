/**
 * Which files of a project a run reads, and their content hashes: git's tracked files plus
 * untracked ones `.gitignore` does not exclude, as they are in the worktree now. A file's hash is
 * its git blob sha (from the index when the worktree copy is unchanged, else computed the way git
 * does), so an unchanged file hits the parse cache without being read.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode, RatchetError } from "../../core/index.js";
import { languageOf, type SourceLanguage } from "./facts.js";
import { GIT_MAX_BUFFER, GIT_TIMEOUT_MS, MAX_FILE_BYTES, MAX_FILES, SKIPPED_DIRS } from "./limits.js";

export interface RepoFile {
  /** Repo-relative, `/`-separated. */
  path: string;
  language: SourceLanguage;
  /** The git blob sha of the worktree content. */
  blob: string;
  /** The content, when it had to be read to hash it (saves a second read on a cache miss). */
  source?: string;
}

export interface RepoState {
  files: RepoFile[];
  /** HEAD's sha, `+dirty` appended when the worktree differs from it; null before the first commit. */
  commit: string | null;
  /** Files not analysed and why (over the size cap, binary, over the file cap). */
  skipped: { path: string; why: "too_large" | "binary" | "file_cap" }[];
}

function git(repo: string, args: string[]): string {
  try {
    return execFileSync("git", ["-C", repo, ...args], {
      encoding: "utf8",
      timeout: GIT_TIMEOUT_MS,
      maxBuffer: GIT_MAX_BUFFER,
      stdio: ["ignore", "pipe", "pipe"],
      // Never take git's index lock for a read (a user's git command may be running).
      env: { ...process.env, GIT_OPTIONAL_LOCKS: "0" },
    });
  } catch (err) {
    const stderr = String((err as { stderr?: unknown }).stderr ?? "").trim();
    throw new RatchetError(
      ErrorCode.NoStateGraph,
      `no state graph: git ${args[0]} failed in ${repo}${stderr ? `: ${stderr.split("\n")[0]}` : ""}`,
      {},
      { cause: err },
    );
  }
}

/** git's blob sha of a content: sha1("blob <bytes>\0" + content). */
export function blobSha(content: Buffer): string {
  return createHash("sha1").update(`blob ${content.length}\0`).update(content).digest("hex");
}

const skippedDir = (path: string) =>
  path.split("/").some((seg) => (SKIPPED_DIRS as readonly string[]).includes(seg));

/** Lists the files a run analyses. @throws RatchetError `no_state_graph` when git cannot read the repo. */
export function repoState(repo: string): RepoState {
  const staged = new Map<string, string>();
  for (const entry of git(repo, ["ls-files", "-s", "-z"]).split("\0")) {
    if (!entry) continue;
    // <mode> <sha> <stage>\t<path>
    const tab = entry.indexOf("\t");
    const meta = entry.slice(0, tab).split(" ");
    if (meta[0] === "160000") continue; // submodule
    staged.set(entry.slice(tab + 1), meta[1] as string);
  }
  // One status call: worktree edits (Y), untracked files .gitignore allows (??), staged changes (X).
  const modified = new Set<string>();
  const others: string[] = [];
  let dirty = false;
  const status = git(repo, ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"]).split(
    "\0",
  );
  for (const entry of status) {
    if (entry.length < 4) continue;
    const x = entry[0];
    const y = entry[1];
    const path = entry.slice(3);
    dirty = true;
    if (x === "?" && y === "?") others.push(path);
    else if (y !== " ") modified.add(path);
  }
  let head: string | null = null;
  try {
    head = git(repo, ["rev-parse", "--verify", "-q", "HEAD"]).trim() || null;
  } catch {
    head = null;
  }
  const paths = [...new Set([...staged.keys(), ...others])].sort();
  const files: RepoFile[] = [];
  const skipped: RepoState["skipped"] = [];
  for (const path of paths) {
    const language = languageOf(path);
    if (!language || skippedDir(path)) continue;
    if (files.length >= MAX_FILES) {
      skipped.push({ path, why: "file_cap" });
      continue;
    }
    const abs = join(repo, path);
    let size: number;
    try {
      const st = statSync(abs);
      if (!st.isFile()) continue;
      size = st.size;
    } catch {
      continue; // deleted in the worktree
    }
    if (size > MAX_FILE_BYTES) {
      skipped.push({ path, why: "too_large" });
      continue;
    }
    const indexed = staged.get(path);
    if (indexed && !modified.has(path)) {
      files.push({ path, language, blob: indexed });
      continue;
    }
    const content = readFileSync(abs);
    if (content.includes(0)) {
      skipped.push({ path, why: "binary" });
      continue;
    }
    files.push({ path, language, blob: blobSha(content), source: content.toString("utf8") });
  }
  return { files, commit: head ? `${head}${dirty ? "+dirty" : ""}` : dirty ? "+dirty" : null, skipped };
}

/** The content of a listed file (read now when listing did not need it). */
export function readSource(repo: string, f: RepoFile): string {
  return f.source ?? readFileSync(join(repo, f.path), "utf8");
}
