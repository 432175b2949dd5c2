/**
 * The wire format between Node and `ratchet-spawner` (pure: no I/O). The header comment of
 * native/spawner.c is the reference; the layout here must match it byte for byte.
 */

/** Protocol version the spawner announces in its hello. */
export const SPAWNER_PROTOCOL_VERSION = 1;
/** Bytes of a stream's nonce (128 bits, single-use). */
export const NONCE_BYTES = 16;
/** A stream connection opens with the nonce and one stream byte. */
export const STREAM_HELLO_BYTES = NONCE_BYTES + 1;
/** Every reply is one fixed-size record. */
export const REPLY_BYTES = 16;
/**
 * Largest request sent to the spawner, in bytes. Larger ones (argv + env beyond what `execve`
 * accepts anyway) are started by Node itself, which reports the kernel's E2BIG.
 */
export const MAX_SPAWNER_REQUEST_BYTES = 16 << 20;

/** Stream numbers, as the child sees them (its fds). */
export const Stream = { stdin: 0, stdout: 1, stderr: 2 } as const;

export const ReplyKind = { hello: 0, started: 1, failed: 2, exited: 3, noStreams: 4 } as const;

export type Reply =
  | { kind: "hello"; version: number }
  | { kind: "started"; id: number; pid: number }
  | { kind: "failed"; id: number; errno: number }
  | { kind: "exited"; id: number; code: number | null; signal: number | null }
  /** The spawner could not reach the stream socket: nothing started (Node starts it itself). */
  | { kind: "noStreams"; id: number; errno: number };

/** What one request asks the spawner to start. */
export interface SpawnRequestFrame {
  id: number;
  nonce: Uint8Array;
  withStdin: boolean;
  file: string;
  cwd: string | undefined;
  /** argv[0] included. */
  argv: readonly string[];
  env: Record<string, string>;
}

/** Encodes one request: u32 len, u32 id, nonce, u8 flags, u32 argc, u32 envc, NUL-ended strings. */
export function encodeRequest(r: SpawnRequestFrame): Buffer {
  const strings = [r.file, r.cwd ?? "", ...r.argv];
  for (const [k, v] of Object.entries(r.env)) strings.push(`${k}=${v}`);
  let size = 4 + 4 + NONCE_BYTES + 1 + 4 + 4;
  for (const s of strings) size += Buffer.byteLength(s) + 1;
  const b = Buffer.allocUnsafe(size);
  b.writeUInt32LE(size - 4, 0);
  b.writeUInt32LE(r.id, 4);
  b.set(r.nonce, 8);
  b[8 + NONCE_BYTES] = r.withStdin ? 1 : 0;
  b.writeUInt32LE(r.argv.length, 25);
  b.writeUInt32LE(strings.length - 2 - r.argv.length, 29);
  let at = 33;
  for (const s of strings) {
    at += b.write(s, at);
    b[at++] = 0;
  }
  return b;
}

/** Decodes one 16-byte reply record. */
export function decodeReply(b: Buffer, at: number): Reply {
  const id = b.readUInt32LE(at);
  const a = b.readInt32LE(at + 8);
  const c = b.readInt32LE(at + 12);
  switch (b[at + 4]) {
    case ReplyKind.hello:
      return { kind: "hello", version: a };
    case ReplyKind.started:
      return { kind: "started", id, pid: a };
    case ReplyKind.failed:
      return { kind: "failed", id, errno: a };
    case ReplyKind.noStreams:
      return { kind: "noStreams", id, errno: a };
    default:
      return { kind: "exited", id, code: a < 0 ? null : a, signal: c === 0 ? null : c };
  }
}

/**
 * Node's own message for an error `uv_spawn` returned: the errors it reports asynchronously carry
 * the file (`spawn ls ENOENT`), the others are thrown as `spawn E2BIG` (lib/internal/child_process.js).
 */
export function nodeSpawnMessage(file: string, code: string): string {
  const async = ["EACCES", "EAGAIN", "EMFILE", "ENFILE", "ENOENT"];
  return async.includes(code) ? `spawn ${file} ${code}` : `spawn ${code}`;
}
