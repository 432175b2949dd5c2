/**
 * Restart recovery (pure rule in states.ts, `recoveryTarget`): threads whose driver is gone move
 * as the rule says, each in its own guarded transition; unanswered tool calls of a thread that
 * fails get their "not run" result first.
 */
import { driverAlive } from "./engine.js";
import { DRIVER_LEASE_MS } from "./limits.js";
import { recoveryTarget, type ThreadState } from "./states.js";
import type { ThreadStore } from "./thread-store.js";

export interface RecoveredThread {
  threadId: string;
  from: ThreadState;
  to: ThreadState;
}

export function recoverThreads(threads: ThreadStore, now: number): RecoveredThread[] {
  const moved: RecoveredThread[] = [];
  for (const t of threads.nonTerminal()) {
    if (driverAlive(t, now)) continue;
    // Created and not yet picked up: give its creator a moment to claim it.
    if (t.state === "created" && now - Date.parse(t.created_at) < DRIVER_LEASE_MS) continue;
    const to = recoveryTarget(t.state, {
      hasCheckpoint: threads.checkpoint(t.thread_id) !== undefined,
      hasPendingApproval: threads.pendingApprovals(t.thread_id).length > 0,
    });
    if (to === null) continue;
    try {
      threads.tx(() => {
        if (to === "failed") threads.fillMissingResults(t.thread_id, "not run: the thread's process died");
        threads.transition(t.thread_id, to, {
          expect: [t.state],
          reason: `restart recovery: driver ${t.driver ?? "(none)"} is gone`,
          patch: { driver: null },
        });
      });
      moved.push({ threadId: t.thread_id, from: t.state, to });
    } catch {
      // another process recovered or resumed it first
    }
  }
  return moved;
}
