/**
 * Bundles: what a run reads from its workflow's folder, as one content-addressed blob, so a worker
 * that shares no filesystem with the enqueuer runs the same bytes.
 *
 * A bundle is the workflow file and every regular file of its folder (the learned scripts
 * `learnings/<step>/main.py|main.mjs`, `contract.json`, data files scripts read) except what runs
 * write or what is history: `execution/`, `learnings/<step>/diffs/`, `script_metadata.json`,
 * `.ratchet/` (secrets), `.git/`. It is encoded as canonical JSON (files sorted by path) and stored
 * with `Blobs.put`, so its sha256 names it. A worker materialises it into
 * `<workspace root>/.ratchet-worker/bundles/<hash>/` (outside `.ratchet/`, which the scripts' sandbox may
 * not read): the bytes are checked against the hash, every path is
 * checked to stay inside the folder, files are written read-only into a temp folder which is
 * renamed into place (atomic: a reader sees no folder or a whole one, and two workers racing keep
 * one). Runs write their outputs (`execution/<run>/`) and `script_metadata.json` beside the
 * bundle's files on the worker only.
 */
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, isAbsolute, join, normalize, relative, sep } from "node:path";
import { ErrorCode, RatchetError } from "../core/index.js";
import { type Blobs, blobHash, checkBlobHash } from "../store/index.js";
import { MAX_BUNDLE_BYTES, MAX_BUNDLE_FILES } from "./limits.js";

export const BUNDLE_FORMAT = "ratchet-bundle/1";
/** Written last into a materialised folder: its presence means the folder is whole. */
const DONE_MARK = ".ratchet-bundle";

export interface BundleFile {
  path: string;
  /** 1 when the file was executable. */
  exec: 0 | 1;
  base64: string;
}

export interface Bundle {
  format: typeof BUNDLE_FORMAT;
  /** The workflow file, relative to the bundle's root. */
  entry: string;
  files: BundleFile[];
}

/** Folder names never bundled, at any depth. */
const SKIP_DIRS = new Set([".git", ".ratchet", "node_modules", "__pycache__", "diffs"]);
/** File names never bundled. */
const SKIP_FILES = new Set(["script_metadata.json", DONE_MARK]);

const tooBig = (what: string) =>
  new RatchetError(ErrorCode.InvalidValue, `the workflow folder is too large to bundle: ${what}`, {
    field: "bundle",
  });

/**
 * Encodes the folder of `workflowFile` as a bundle (canonical bytes: the same folder gives the same hash).
 * @throws RatchetError `invalid_value` naming `bundle` above {@link MAX_BUNDLE_BYTES} or {@link MAX_BUNDLE_FILES}.
 */
export function encodeBundle(workflowFile: string): Buffer {
  const home = dirname(workflowFile);
  const files: BundleFile[] = [];
  let size = 0;
  const walk = (dir: string, top: boolean) => {
    for (const name of readdirSync(dir).sort()) {
      const abs = join(dir, name);
      const st = lstatSync(abs);
      if (st.isDirectory()) {
        if (SKIP_DIRS.has(name) || (top && name === "execution")) continue;
        walk(abs, false);
      } else if (st.isFile() && !SKIP_FILES.has(name)) {
        // Links and special files are left out: the fast path refuses a linked script anyway.
        const bytes = readFileSync(abs);
        size += bytes.byteLength;
        if (files.length >= MAX_BUNDLE_FILES) throw tooBig(`more than ${MAX_BUNDLE_FILES} files`);
        if (size > MAX_BUNDLE_BYTES) throw tooBig(`more than ${MAX_BUNDLE_BYTES} bytes`);
        files.push({
          path: relative(home, abs).split(sep).join("/"),
          exec: st.mode & 0o111 ? 1 : 0,
          base64: bytes.toString("base64"),
        });
      }
    }
  };
  walk(home, true);
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const bundle: Bundle = { format: BUNDLE_FORMAT, entry: basename(workflowFile), files };
  return Buffer.from(JSON.stringify(bundle), "utf8");
}

/** Stores the bundle of a workflow file; returns its hash. Call inside `store.tx` to commit it with its run. */
export function putBundle(blobs: Blobs, workflowFile: string): string {
  return blobs.put(encodeBundle(workflowFile));
}

/** A path of a bundle, checked to stay inside its root. */
function safePath(p: unknown): string {
  const bad = () =>
    new RatchetError(ErrorCode.InvalidValue, `bundle path ${JSON.stringify(p)} leaves the bundle`, {
      field: "bundle",
    });
  if (typeof p !== "string" || p === "" || p.includes("\0") || isAbsolute(p) || p.includes("\\")) throw bad();
  const n = normalize(p);
  if (n !== p || n.split("/").some((part) => part === ".." || part === "." || part === "")) throw bad();
  return n;
}

/** Decodes and checks a bundle's bytes. @throws RatchetError `invalid_value` naming `bundle`. */
export function decodeBundle(bytes: Buffer): Bundle {
  let b: Bundle;
  try {
    b = JSON.parse(bytes.toString("utf8")) as Bundle;
  } catch {
    throw new RatchetError(ErrorCode.InvalidValue, "the bundle is not JSON", { field: "bundle" });
  }
  if (b?.format !== BUNDLE_FORMAT || !Array.isArray(b.files))
    throw new RatchetError(ErrorCode.InvalidValue, `the bundle is not ${BUNDLE_FORMAT}`, { field: "bundle" });
  safePath(b.entry);
  const seen = new Set<string>();
  for (const f of b.files) {
    safePath(f.path);
    if (typeof f.base64 !== "string") safePath(null);
    if (seen.has(f.path)) safePath(f.path + "/..");
    seen.add(f.path);
  }
  if (!seen.has(b.entry))
    throw new RatchetError(ErrorCode.InvalidValue, `the bundle lacks its entry ${b.entry}`, {
      field: "bundle",
    });
  return b;
}

/**
 * Materialises bundle `hash` under `cacheRoot` (once per hash) and returns the workflow file in it.
 * The bytes come from `blobs` (checked against the hash there, and again here).
 * @throws RatchetError `not_found` (no such bundle), `invalid_value` naming `bundle` (a bad bundle).
 */
export function materialiseBundle(
  blobs: Blobs,
  hash: string,
  cacheRoot: string,
): { dir: string; workflowFile: string } {
  checkBlobHash(hash);
  const dir = join(cacheRoot, hash);
  const entryOf = (): string => {
    const entry = readFileSync(join(dir, DONE_MARK), "utf8").trim();
    return join(dir, safePath(entry));
  };
  if (existsSync(join(dir, DONE_MARK))) return { dir, workflowFile: entryOf() };
  const bytes = blobs.getBytes(hash);
  if (blobHash(bytes) !== hash)
    throw new RatchetError(ErrorCode.InvalidValue, `bundle ${hash} does not match its hash`, {
      field: "bundle",
    });
  const bundle = decodeBundle(bytes);
  mkdirSync(cacheRoot, { recursive: true });
  const tmp = join(cacheRoot, `.tmp-${process.pid}-${randomBytes(6).toString("hex")}`);
  try {
    for (const f of bundle.files) {
      const abs = join(tmp, f.path);
      mkdirSync(dirname(abs), { recursive: true });
      writeFileSync(abs, Buffer.from(f.base64, "base64"), { flag: "wx" });
      chmodSync(abs, f.exec ? 0o555 : 0o444);
    }
    writeFileSync(join(tmp, DONE_MARK), `${bundle.entry}\n`, { flag: "wx" });
    chmodSync(join(tmp, DONE_MARK), 0o444);
    try {
      renameSync(tmp, dir);
    } catch (e) {
      // Another worker process on this machine materialised it first: keep theirs.
      const code = (e as NodeJS.ErrnoException).code;
      if ((code !== "ENOTEMPTY" && code !== "EEXIST") || !existsSync(join(dir, DONE_MARK))) throw e;
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return { dir, workflowFile: entryOf() };
}
