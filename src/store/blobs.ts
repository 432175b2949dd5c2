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

// node:crypto is loaded when a blob is first written: most ledger CLI writes store none.
const crypto = lazyBuiltin<typeof import("node:crypto")>("node:crypto");

const HASH_RE = /^[0-9a-f]{64}$/;

/**
 * Content-addressed blobs: `sha256` of the bytes names the file `<dir>/<ab>/<cdef…>`. Writes go to a
 * temp file in the same folder and are renamed into place, so a reader never sees half a blob.
 */
export class BlobStore {
  constructor(readonly dir: string) {}

  /** Stores `content` and returns its hash. Storing the same bytes twice is a no-op. */
  put(content: string | Uint8Array): string {
    const bytes = typeof content === "string" ? Buffer.from(content, "utf8") : content;
    const hash = crypto().createHash("sha256").update(bytes).digest("hex");
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
    if (!HASH_RE.test(hash))
      throw new RatchetError(ErrorCode.InvalidValue, `not a blob hash: ${JSON.stringify(hash)}`, {
        field: "hash",
      });
    return join(this.dir, hash.slice(0, 2), hash.slice(2));
  }

  has(hash: string): boolean {
    return existsSync(this.pathOf(hash));
  }

  /** Reads a blob as UTF-8 text. */
  getText(hash: string): string {
    const path = this.pathOf(hash);
    if (!existsSync(path)) throw new RatchetError(ErrorCode.NotFound, `blob ${hash} not found`, { hash });
    return readFileSync(path, "utf8");
  }
}
