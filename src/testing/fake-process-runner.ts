/**
 * A hand-written {@link ProcessRunner} for tests: replies are scripted by matching the command and
 * arguments, every request is recorded, and nothing is spawned. Output goes through the same
 * {@link HeadTailCapture} as the real runner, so caps and `truncated` behave the same.
 *
 * @example
 * const runner = new FakeProcessRunner()
 *   .on({ command: "git", args: ["status", "--porcelain"] }, { stdout: "" })
 *   .on({ command: /python3?$/ }, (req) => ({ exitCode: req.args?.includes("--fail") ? 1 : 0 }));
 * await doTheThing({ runner });
 * expect(runner.requests.map((r) => r.command)).toEqual(["git", "python3"]);
 */

import { appendFileSync } from "node:fs";
import { MAX_CAPTURE_BYTES } from "../core/index.js";
import type { ProcessRunner, RunRequest, RunResult } from "../exec/index.js";
import { DEFAULT_EXEC_TIMEOUT_MS, HeadTailCapture } from "../exec/index.js";

/** A scripted outcome. Every field is optional. */
export interface FakeReply {
  /** Default `0` (or `null` when `signal`, `spawnError` or `hang` is set). */
  exitCode?: number | null;
  /** Default `null` (`"SIGTERM"` for a `hang` reply that was killed). */
  signal?: NodeJS.Signals | null;
  /** Written first, as one chunk. Default empty. */
  stdout?: string | Uint8Array;
  /** Written after stdout, as one chunk. Default empty. */
  stderr?: string | Uint8Array;
  /** The process "could not be started": no output, `exitCode: null`. */
  spawnError?: { code: string; message: string };
  /**
   * After writing its output the process never exits by itself: the run resolves only when
   * `timeoutMs` expires (`timedOut`) or `signal` aborts (`cancelled`), as a killed process would.
   */
  hang?: boolean;
  /** Reported `durationMs`. Default `0` (real elapsed time for `hang`). */
  durationMs?: number;
}

/** Which requests a script answers: command (exact or RegExp) and optionally args, or a predicate. */
export type FakeMatcher =
  | { command: string | RegExp; args?: readonly string[] | ((args: readonly string[]) => boolean) }
  | ((req: RunRequest) => boolean);

/** A reply, or a function computing it from the request. */
export type FakeResponder = FakeReply | ((req: RunRequest) => FakeReply | Promise<FakeReply>);

interface Script {
  matcher: FakeMatcher;
  reply: FakeResponder;
  remaining: number;
}

function matches(m: FakeMatcher, req: RunRequest): boolean {
  if (typeof m === "function") return m(req);
  const cmdOk = typeof m.command === "string" ? m.command === req.command : m.command.test(req.command);
  if (!cmdOk) return false;
  const args = req.args ?? [];
  if (m.args === undefined) return true;
  if (typeof m.args === "function") return m.args(args);
  return m.args.length === args.length && m.args.every((a, i) => a === args[i]);
}

function describe(req: RunRequest): string {
  return [req.command, ...(req.args ?? [])].join(" ");
}

/** A {@link ProcessRunner} that replays scripted results and records the requests it got. */
export class FakeProcessRunner implements ProcessRunner {
  /** Every request received, in order (including unmatched and cancelled ones). */
  readonly requests: RunRequest[] = [];
  readonly #scripts: Script[] = [];
  #fallback: FakeResponder | undefined;
  #nextPid = 40_000;

  /**
   * Scripts a reply for matching requests. The first script that matches (in registration order)
   * and has uses left answers. `times` limits its uses (default unlimited).
   */
  on(matcher: FakeMatcher, reply: FakeResponder, opts: { times?: number } = {}): this {
    this.#scripts.push({ matcher, reply, remaining: opts.times ?? Number.POSITIVE_INFINITY });
    return this;
  }

  /** The reply when no script matches. Default: `spawnError` ENOENT naming the request. */
  otherwise(reply: FakeResponder): this {
    this.#fallback = reply;
    return this;
  }

  /** Requests whose command equals (or matches) `command`. */
  calls(command: string | RegExp): RunRequest[] {
    return this.requests.filter((r) =>
      typeof command === "string" ? r.command === command : command.test(r.command),
    );
  }

  /** Runs a request against the scripts. Resolves like the real runner; never spawns. */
  async run(req: RunRequest): Promise<RunResult> {
    this.requests.push(req);
    const cap = req.maxCaptureBytes ?? MAX_CAPTURE_BYTES;
    if (req.signal?.aborted) return result(cap, { cancelled: true });
    const script = this.#scripts.find((s) => s.remaining > 0 && matches(s.matcher, req));
    if (script) script.remaining--;
    const responder: FakeResponder = script?.reply ??
      this.#fallback ?? {
        spawnError: { code: "ENOENT", message: `FakeProcessRunner: no scripted reply for: ${describe(req)}` },
      };
    const reply = typeof responder === "function" ? await responder(req) : responder;
    if (reply.spawnError)
      return result(cap, { spawnError: reply.spawnError, durationMs: reply.durationMs ?? 0 });

    const captures = {
      stdout: new HeadTailCapture(cap),
      stderr: new HeadTailCapture(cap),
      combined: new HeadTailCapture(cap),
    };
    for (const stream of ["stdout", "stderr"] as const) {
      const data = reply[stream];
      if (data === undefined || data.length === 0) continue;
      const chunk = Buffer.from(data);
      captures[stream].push(chunk);
      captures.combined.push(chunk);
      if (req.combinedFile !== undefined) appendFileSync(req.combinedFile, chunk);
      req.onOutput?.(chunk, stream);
    }
    const pid = this.#nextPid++;
    if (!reply.hang) {
      const killed = reply.signal != null;
      return result(cap, {
        captures,
        pid,
        exitCode: reply.exitCode !== undefined ? reply.exitCode : killed ? null : 0,
        signal: reply.signal ?? null,
        durationMs: reply.durationMs ?? 0,
      });
    }
    const started = performance.now();
    const how = await waitForKill(req);
    return result(cap, {
      captures,
      pid,
      exitCode: reply.exitCode ?? null,
      signal: reply.signal ?? "SIGTERM",
      timedOut: how === "timeout",
      cancelled: how === "abort",
      durationMs: reply.durationMs ?? performance.now() - started,
    });
  }
}

function waitForKill(req: RunRequest): Promise<"timeout" | "abort"> {
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve("abort");
    };
    const timer = setTimeout(() => {
      req.signal?.removeEventListener("abort", onAbort);
      resolve("timeout");
    }, req.timeoutMs ?? DEFAULT_EXEC_TIMEOUT_MS);
    req.signal?.addEventListener("abort", onAbort, { once: true });
  });
}

interface ResultParts {
  captures?: Record<"stdout" | "stderr" | "combined", HeadTailCapture>;
  exitCode?: number | null;
  signal?: NodeJS.Signals | null;
  timedOut?: boolean;
  cancelled?: boolean;
  durationMs?: number;
  spawnError?: { code: string; message: string };
  pid?: number;
}

function result(cap: number, p: ResultParts): RunResult {
  const c = p.captures ?? {
    stdout: new HeadTailCapture(cap),
    stderr: new HeadTailCapture(cap),
    combined: new HeadTailCapture(cap),
  };
  const out = c.stdout.snapshot();
  const err = c.stderr.snapshot();
  const all = c.combined.snapshot();
  const r: RunResult = {
    exitCode: p.exitCode ?? null,
    signal: p.signal ?? null,
    stdout: out.text,
    stderr: err.text,
    combined: all.text,
    stdoutBytes: out.totalBytes,
    stderrBytes: err.totalBytes,
    combinedBytes: all.totalBytes,
    truncated: out.truncated || err.truncated || all.truncated,
    omittedBytes: { stdout: out.omittedBytes, stderr: err.omittedBytes, combined: all.omittedBytes },
    durationMs: p.durationMs ?? 0,
    timedOut: p.timedOut ?? false,
    cancelled: p.cancelled ?? false,
  };
  if (p.spawnError) r.spawnError = p.spawnError;
  if (p.pid !== undefined) r.pid = p.pid;
  return r;
}
