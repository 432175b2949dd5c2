/**
 * The blobs half of `store copy`: a SQLite workspace keeps them as files under `blobs/`
 * (`BlobStore`), a PostgreSQL store in its `blobs` table (`DbBlobStore`, migration 3). Every blob is
 * read, checked against its name (sha256) before it is written anywhere, written, and checked again
 * where it landed.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode, lazyBuiltin, RatchetError } from "../core/index.js";
import { BlobStore, blobHash } from "./blobs.js";
import type { SqlPort } from "./sql.js";

const crypto = lazyBuiltin<typeof import("node:crypto")>("node:crypto");

/** Where one side keeps its blobs. */
export type BlobHome = { kind: "folder"; dir: string } | { kind: "table"; sql: SqlPort };

/** What a side's blobs add up to: how many, their bytes, and a digest of their sorted hashes. */
export interface BlobDigest {
  count: number;
  bytes: number;
  /** sha256 over the sorted hashes, one per line: equal on both sides means the same set. */
  hash: string;
}

const HEX2 = /^[0-9a-f]{2}$/;
const HEX62 = /^[0-9a-f]{62}$/;
const PAGE = 500;

/** Every blob hash of a home, sorted (temp files of an interrupted write and strays are ignored). */
export function blobHashes(home: BlobHome): string[] {
  if (home.kind === "folder") {
    if (!existsSync(home.dir)) return [];
    const out: string[] = [];
    for (const ab of readdirSync(home.dir).sort()) {
      if (!HEX2.test(ab)) continue;
      const sub = join(home.dir, ab);
      if (!statSync(sub).isDirectory()) continue;
      for (const rest of readdirSync(sub).sort()) if (HEX62.test(rest)) out.push(ab + rest);
    }
    return out;
  }
  const out: string[] = [];
  let after = "";
  for (;;) {
    const rows = home.sql.all<{ hash: string }>(
      "SELECT hash FROM blobs WHERE hash > ? ORDER BY hash LIMIT ?",
      [after, PAGE],
    );
    for (const r of rows) out.push(r.hash);
    if (rows.length < PAGE) return out;
    after = (rows[rows.length - 1] as { hash: string }).hash;
  }
}

/** A blob's bytes and when it was stored (null for a file: the folder keeps no such record). */
function readBlob(home: BlobHome, hash: string): { bytes: Buffer; createdAt: string | null } {
  if (home.kind === "folder") {
    const path = new BlobStore(home.dir).pathOf(hash);
    return { bytes: readFileSync(path), createdAt: statSync(path).mtime.toISOString() };
  }
  const row = home.sql.get<{ bytes: Buffer; created_at: string }>(
    "SELECT bytes, created_at FROM blobs WHERE hash = ?",
    [hash],
  );
  if (!row) throw new RatchetError(ErrorCode.NotFound, `blob ${hash} not found`, { hash });
  return { bytes: row.bytes, createdAt: row.created_at };
}

const corrupt = (hash: string, where: string, field: "from" | "to") =>
  new RatchetError(
    ErrorCode.InvalidValue,
    `blob ${hash} in ${where} does not match its hash (corrupted bytes): store copy refuses it; nothing was written`,
    { field, hash },
  );

/**
 * Copies every blob of `from` into `to`, each checked against its hash on both sides. A table
 * target is written through the caller's open transaction (it commits with the rows); a folder
 * target gets files at once (content-addressed, so a file left by an interrupted copy is valid and
 * reused). @throws invalid_value naming the hash of a blob whose bytes do not match it.
 */
export function copyBlobs(
  from: BlobHome,
  to: BlobHome,
  labels: { from: string; to: string },
  now: () => string,
): BlobDigest {
  const hashes = blobHashes(from);
  let bytes = 0;
  const target = to.kind === "folder" ? new BlobStore(to.dir) : undefined;
  for (const hash of hashes) {
    const blob = readBlob(from, hash);
    if (blobHash(blob.bytes) !== hash) throw corrupt(hash, labels.from, "from");
    bytes += blob.bytes.byteLength;
    if (target) {
      target.put(blob.bytes);
      // `put` keeps a file that is already there: check what is on disk now, whoever wrote it.
      if (blobHash(readFileSync(target.pathOf(hash))) !== hash) throw corrupt(hash, labels.to, "to");
    } else if (to.kind === "table") {
      to.sql.run(
        "INSERT INTO blobs (hash, bytes, size, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING",
        [hash, blob.bytes, blob.bytes.byteLength, blob.createdAt ?? now()],
      );
    }
  }
  return { count: hashes.length, bytes, hash: digestHashes(hashes) };
}

/**
 * Reads and checks every blob of a home: count, bytes, the digest of the set.
 * @throws invalid_value naming the first blob whose bytes do not match its hash.
 */
export function digestBlobs(home: BlobHome, label: string, field: "from" | "to"): BlobDigest {
  const hashes = blobHashes(home);
  let bytes = 0;
  if (home.kind === "table" && home.sql.dialect === "postgres") {
    // The server hashes its own bytes: nothing crosses the network but the verdict.
    const bad = home.sql.get<{ hash: string }>(
      "SELECT hash FROM blobs WHERE encode(sha256(bytes), 'hex') <> hash ORDER BY hash LIMIT 1",
    );
    if (bad) throw corrupt(bad.hash, label, field);
    bytes = Number(
      home.sql.get<{ n: number }>("SELECT COALESCE(SUM(octet_length(bytes)), 0) AS n FROM blobs")?.n ?? 0,
    );
  } else {
    for (const hash of hashes) {
      const b = readBlob(home, hash).bytes;
      if (blobHash(b) !== hash) throw corrupt(hash, label, field);
      bytes += b.byteLength;
    }
  }
  return { count: hashes.length, bytes, hash: digestHashes(hashes) };
}

function digestHashes(hashes: readonly string[]): string {
  const h = crypto().createHash("sha256");
  for (const x of hashes) h.update(`${x}\n`);
  return h.digest("hex");
}
