/**
 * Thread turns as queue jobs (`ratchet thread start … --queue`, `thread resume <id> --queue`,
 * `thread approve|deny <id> --queue`).
 *
 * A turn is one drive of a thread by a worker through the thread service — the same code as
 * `thread start` / `thread resume` (src/threads). Two claims keep it to one driver: the turn's own
 * (`thread.turn_claimed`, written under the write lock only when no claim of that turn exists, as
 * runner tasks do, runner-job.ts) and the thread's one-driver-at-a-time claim (a resume refuses a
 * thread a live driver holds; src/threads/ARCHITECTURE.md "the claim and the fence").
 *
 * A start turn carries the goal: the worker creates the thread (its id is recorded in the turn's
 * result, `thread.turn_result`), because a thread created but not claimed within the driver lease
 * is failed by the threads' restart recovery — a queued turn may wait longer than that.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { ErrorCode, RatchetError } from "../core/index.js";
import type { Store } from "../store/index.js";
import { DEFAULT_QUEUE } from "./jobs.js";
import { JOB_MAX_ATTEMPTS } from "./limits.js";
import type { JobEvents } from "./runner-job.js";

export const THREAD_TURN_ENTITY = "thread_turn";
export const TurnEvent: JobEvents = {
  kind: THREAD_TURN_ENTITY,
  Queued: "thread.turn_queued",
  Claimed: "thread.turn_claimed",
  Result: "thread.turn_result",
  Interrupted: "thread.turn_interrupted",
};

/** The task identifier of thread turns in queue `name`. */
export function threadTaskIdentifier(queue: string = DEFAULT_QUEUE): string {
  return queue === DEFAULT_QUEUE ? "ratchet_thread" : `ratchet_thread@${queue}`;
}

export type ThreadTurnPayload =
  | { turn_id: string; op: "start"; goal: string; project: string | null; model: string | null }
  | { turn_id: string; op: "resume"; thread_id: string };

export interface ThreadTurnOutcome {
  thread_id: string;
  outcome: string;
  state: string;
  reason: string | null;
}

/** Drives one turn (the CLI passes the thread service's start/resume). */
export type ThreadTurnExecutor = (turn: ThreadTurnPayload, signal: AbortSignal) => Promise<ThreadTurnOutcome>;

const badJob = (what: string) =>
  new RatchetError(ErrorCode.InvalidValue, `thread turn payload: ${what}`, { field: "payload" });

export function parseThreadTurn(raw: unknown): ThreadTurnPayload {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw badJob("must be an object");
  const o = raw as Record<string, unknown>;
  const str = (k: string) => {
    if (typeof o[k] !== "string" || o[k] === "") throw badJob(`${k} must be a non-empty string`);
    return o[k] as string;
  };
  const opt = (k: string) => {
    if (o[k] === undefined || o[k] === null) return null;
    if (typeof o[k] !== "string") throw badJob(`${k} must be a string`);
    return o[k] as string;
  };
  const turn = str("turn_id");
  if (o.op === "start")
    return { turn_id: turn, op: "start", goal: str("goal"), project: opt("project"), model: opt("model") };
  if (o.op === "resume") return { turn_id: turn, op: "resume", thread_id: str("thread_id") };
  throw badJob("op must be start or resume");
}

export interface QueuedTurn {
  turn_id: string;
  op: "start" | "resume";
  thread_id: string | null;
  job_id: number;
  queue: string;
}

/** A new turn id: `turn-<time>-<random>`. */
export function newTurnId(): string {
  return `turn-${Date.now().toString(36)}-${randomBytes(5).toString("hex")}`;
}

/** Records a queued turn and its job in one transaction (the queue's schema must exist). */
export function enqueueThreadTurnSync(
  store: Store,
  turn: ThreadTurnPayload,
  queue = DEFAULT_QUEUE,
): QueuedTurn {
  return store.tx(() => {
    const threadId = turn.op === "resume" ? turn.thread_id : null;
    store.appendEvent({
      entityKind: THREAD_TURN_ENTITY,
      entityId: turn.turn_id,
      type: TurnEvent.Queued,
      payload: {
        queue_id: turn.turn_id,
        op: turn.op,
        thread_id: threadId,
        queue,
        queued_by: `${process.pid}@${hostname()}`,
      },
    });
    const job = store.sql.get<{ id: number }>(
      `SELECT (graphile_worker.add_job(?, ?::json, max_attempts => ?, job_key => ?, job_key_mode => 'unsafe_dedupe')).id AS id`,
      [threadTaskIdentifier(queue), JSON.stringify(turn), JOB_MAX_ATTEMPTS, `thread:${turn.turn_id}`],
    );
    return { turn_id: turn.turn_id, op: turn.op, thread_id: threadId, job_id: Number(job?.id), queue };
  });
}
