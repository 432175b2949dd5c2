import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { ErrorCode, lazyBuiltin, RatchetError } from "../core/index.js";
import type { Store } from "./types.js";

// node:crypto is loaded when a blob is first written: most ledger CLI writes store none.
const crypto = lazyBuiltin<typeof import("node:crypto")>("node:crypto");

const HASH_RE = /^[0-9a-f]{64}$/;

/**
 * Content-addressed blobs (full logs whose display text was cut, workflow bundles, learned
 * scripts): `sha256` of the bytes is the name. Two homes: a folder on the local disk
 * ({@link BlobStore}, the SQLite workspace's `.ratchet/blobs/`) and a `blobs` table in the shared
 * database ({@link DbBlobStore}, PostgreSQL), so a machine that shares no filesystem with the
 * writer reads the same bytes.
 */
export interface Blobs {
  /** Stores `content` and returns its hash. Storing the same bytes twice is a no-op. */
  put(content: string | Uint8Array): string;
  has(hash: string): boolean;
  /** @throws not_found naming the hash. */
  getBytes(hash: string): Buffer;
  /** Reads a blob as UTF-8 text. @throws not_found naming the hash. */
  getText(hash: string): string;
}

/** The sha256 of `bytes`, lower-case hex. */
export function blobHash(bytes: Uint8Array): string {
  return crypto().createHash("sha256").update(bytes).digest("hex");
}

/** @throws invalid_value unless `hash` is a sha256 hex digest (no path traversal, no SQL surprises). */
export function checkBlobHash(hash: string): void {
  if (!HASH_RE.test(hash))
    throw new RatchetError(ErrorCode.InvalidValue, `not a blob hash: ${JSON.stringify(hash)}`, {
      field: "hash",
    });
}

const toBytes = (content: string | Uint8Array): Uint8Array =>
  typeof content === "string" ? Buffer.from(content, "utf8") : content;

/**
 * Content-addressed blobs: `sha256` of the bytes names the file `<dir>/<ab>/<cdef…>`. Writes go to a
 * temp file in the same folder and are renamed into place, so a reader never sees half a blob.
 */
export class BlobStore implements Blobs {
  constructor(readonly dir: string) {}

  /** Stores `content` and returns its hash. Storing the same bytes twice is a no-op. */
  put(content: string | Uint8Array): string {
    const bytes = toBytes(content);
    const hash = blobHash(bytes);
    const path = this.pathOf(hash);
    if (existsSync(path)) return hash;
    const folder = join(this.dir, hash.slice(0, 2));
    mkdirSync(folder, { recursive: true });
    const tmp = join(folder, `.tmp-${process.pid}-${crypto().randomBytes(6).toString("hex")}`);
    const fd = openSync(tmp, "w", 0o644);
    try {
      writeSync(fd, bytes);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
    return hash;
  }

  /** The path of a blob. Refuses anything that is not a sha256 hex digest (no path traversal). */
  pathOf(hash: string): string {
    checkBlobHash(hash);
    return join(this.dir, hash.slice(0, 2), hash.slice(2));
  }

  has(hash: string): boolean {
    return existsSync(this.pathOf(hash));
  }

  getBytes(hash: string): Buffer {
    const path = this.pathOf(hash);
    if (!existsSync(path)) throw notFound(hash);
    return readFileSync(path);
  }

  /** Reads a blob as UTF-8 text. */
  getText(hash: string): string {
    return this.getBytes(hash).toString("utf8");
  }
}

const notFound = (hash: string) => new RatchetError(ErrorCode.NotFound, `blob ${hash} not found`, { hash });

/**
 * Blobs in the store's own `blobs` table (PostgreSQL migration 3): written through `store.tx`, so a
 * blob put inside a write flow commits with the row that references it, and every machine on the
 * database reads it. Bytes are checked against their hash on read.
 */
export class DbBlobStore implements Blobs {
  constructor(
    readonly store: Store,
    readonly now: () => string = () => new Date().toISOString(),
  ) {}

  put(content: string | Uint8Array): string {
    const bytes = toBytes(content);
    const hash = blobHash(bytes);
    this.store.tx(() =>
      this.store.sql.run(
        "INSERT INTO blobs (hash, bytes, size, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING",
        [hash, bytes, bytes.byteLength, this.now()],
      ),
    );
    return hash;
  }

  has(hash: string): boolean {
    checkBlobHash(hash);
    return this.store.sql.get("SELECT 1 AS one FROM blobs WHERE hash = ?", [hash]) !== undefined;
  }

  getBytes(hash: string): Buffer {
    checkBlobHash(hash);
    const row = this.store.sql.get<{ bytes: Buffer }>("SELECT bytes FROM blobs WHERE hash = ?", [hash]);
    if (!row) throw notFound(hash);
    if (blobHash(row.bytes) !== hash)
      throw new RatchetError(ErrorCode.Internal, `blob ${hash} does not match its hash (corrupted row)`, {
        hash,
      });
    return row.bytes;
  }

  getText(hash: string): string {
    return this.getBytes(hash).toString("utf8");
  }
}
