/**
 * The types the driver and the host functions share: what a host call answers, what ends a drive,
 * and what a driver needs. A file of its own so that engine.ts, host.ts, checkpoint.ts and
 * code-step.ts import it and not each other.
 */
import type { ModelClient } from "../model/index.js";
import type { ActionProvider } from "./actions.js";
import type { ThreadsConfig } from "./config.js";
import type { Documents } from "./documents.js";
import type { ThreadStore } from "./thread-store.js";
import type { OrchestratorVersions } from "./versions.js";
import type { VmFactory, VmLimits } from "./vm.js";

/** The answer to one host call: a value, or an exception raised in the script. */
export type HostAnswer = { value: unknown } | { error: { type: string; message: string } };

/**
 * What a host call comes to: an answer for the script, or the end of this drive — the thread waits
 * for a decision (`waiting`), was interrupted and keeps its checkpoint (`suspended`), or fails.
 */
export type HostResult = HostAnswer | HostStopResult;
export interface HostStopResult {
  stop: "waiting" | "suspended" | "failed";
  reason: string;
}

export const isStop = (r: HostResult): r is HostStopResult => "stop" in r;
export const stop = (kind: HostStopResult["stop"], reason: string): HostStopResult => ({
  stop: kind,
  reason,
});
export const pyError = (type: string, message: string): HostAnswer => ({ error: { type, message } });

export interface HostContext {
  /** Number of this host call in the thread. */
  seq: number;
  /**
   * While this is the same non-null token, nothing but this driver has written the store (a group
   * commit is open: this process has not yielded and other processes wait for the write lock).
   */
  unchanged?: object | null;
  /** Runs `effects` and saves the answered checkpoint in one transaction. */
  commit(answer: HostAnswer, effects?: () => void): HostAnswer;
}

export interface HostHooks {
  waitForDecision(approvalId: string): Promise<"decided" | "released" | "cancelled">;
  /** A host-side failure raised into the script (so the script's death is not blamed on it). */
  hostError(message: string): void;
}

/** How a drive ended: the thread completed, failed, waits for a decision, or was suspended (interrupted). */
export type DriveOutcome = "completed" | "failed" | "waiting" | "suspended";

/** What a driver reports while it runs (the CLI renders these). */
export type DriveEvent =
  | { type: "text"; delta: string }
  | {
      type: "action";
      name: string;
      callId: string;
      args: unknown;
      status: "running" | "succeeded" | "failed" | "denied";
    }
  | { type: "approval"; approvalId: string; action: string; callId: string; args: unknown }
  | { type: "skills"; names: string[] }
  | { type: "code"; output: string }
  | { type: "state"; state: string; reason: string | null };

export interface EngineDeps {
  threads: ThreadStore;
  docs: Documents;
  versions: OrchestratorVersions;
  config: ThreadsConfig;
  actions: ActionProvider;
  /** The model client, made on first use. */
  model: () => ModelClient;
  /** Default Monty. */
  vm?: VmFactory;
  /** `<pid>@<host>` of this process. */
  driverId?: string;
  nowMs?: () => number;
  onEvent?: (e: DriveEvent) => void;
  /** How long to wait for an approval before letting go (thread stays Waiting). */
  approvalWaitMs?: number;
  signal?: AbortSignal;
  /** Orchestrator VM limits (defaults in limits.ts). */
  limits?: Partial<VmLimits>;
  /** Runs `goal` as a child thread to its end (`rlm_query` in a code step). */
  subAgent?: (goal: string, parentThreadId: string) => Promise<{ ok: boolean; answer: string }>;
}

/** What a code step needs of the host (host.ts implements it; code-step.ts does not import host.ts). */
export interface CodeStepHost {
  readonly d: EngineDeps;
  readonly threadId: string;
  addUsage(input: number, output: number): number;
  /** Runs one action of the code through the checkpoint; its writes commit at once. */
  executeForCode(call: { callId: string; action: string; args: Record<string, unknown> }): Promise<
    | {
        result: { action_name: string; output: unknown; is_error: boolean; duration_ms: number };
        status: string;
      }
    | { stop: string; reason: string }
    | {
        gate: {
          approval_id: string;
          call_id: string;
          action: string;
          args: string;
          expires_ms?: number | null;
        };
      }
  >;
}
