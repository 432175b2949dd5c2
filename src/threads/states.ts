/**
 * Thread states and the moves between them, as data. Pure: no I/O. The one guarded move that
 * writes a state is `ThreadStore.transition()` (thread-store.ts); this file only says what is legal.
 */

/** Every state a thread can be in. Stored as these strings; never renamed. */
export const ThreadState = {
  /** Recorded, not yet picked up by a driver. */
  Created: "created",
  /** A driver process is running its orchestrator. */
  Running: "running",
  /** Paused for a decision (an approval); the paused VM is saved. Resumable. */
  Waiting: "waiting",
  /** Its driver went away with a saved checkpoint (restart recovery). Resumable. */
  Suspended: "suspended",
  /** The orchestrator finished with a result; completion missions have not yet seen it. */
  Completed: "completed",
  /** Completed and handed to the completion missions (terminal). */
  Done: "done",
  /** Ended without a result: error, limit, budget, cancel (terminal). `reason` says why. */
  Failed: "failed",
} as const;
export type ThreadState = (typeof ThreadState)[keyof typeof ThreadState];

/** The legal moves. Pinned by states.test.ts. */
export const THREAD_TRANSITIONS: Readonly<Record<ThreadState, readonly ThreadState[]>> = {
  created: ["running", "failed"],
  running: ["waiting", "suspended", "completed", "failed"],
  waiting: ["running", "failed"],
  suspended: ["running", "failed"],
  completed: ["done"],
  done: [],
  failed: [],
};

export function isThreadState(s: string): s is ThreadState {
  return Object.hasOwn(THREAD_TRANSITIONS, s);
}

export function canTransition(from: ThreadState, to: ThreadState): boolean {
  return THREAD_TRANSITIONS[from].includes(to);
}

/** States a `resume` may start from. */
export const RESUMABLE_STATES: readonly ThreadState[] = ["waiting", "suspended"];

export function isResumable(s: ThreadState): boolean {
  return RESUMABLE_STATES.includes(s);
}

export function isTerminal(s: ThreadState): boolean {
  return THREAD_TRANSITIONS[s].length === 0;
}

/**
 * What restart recovery does with a thread whose driver is gone: Waiting with a pending approval
 * stays; Running with a checkpoint becomes Suspended; every other non-terminal thread fails.
 * `null` = leave it alone.
 */
export function recoveryTarget(
  s: ThreadState,
  facts: { hasCheckpoint: boolean; hasPendingApproval: boolean },
): ThreadState | null {
  switch (s) {
    case "waiting":
      return facts.hasPendingApproval || facts.hasCheckpoint ? null : "failed";
    case "running":
      return facts.hasCheckpoint ? "suspended" : "failed";
    case "created":
      return "failed";
    case "suspended":
    case "completed":
    case "done":
    case "failed":
      return null;
  }
}
