// Pins of the stored/wire names: states, the transition table, event types, policy order.
import { describe, expect, it } from "vitest";
import { ThreadEvent } from "./events.js";
import { evaluatePolicy, globMatch } from "./policy.js";
import { canTransition, isResumable, recoveryTarget, THREAD_TRANSITIONS, ThreadState } from "./states.js";

describe("thread states", () => {
  it("pins the states and the transition table", () => {
    expect(Object.values(ThreadState)).toEqual([
      "created",
      "running",
      "waiting",
      "suspended",
      "completed",
      "done",
      "failed",
    ]);
    expect(THREAD_TRANSITIONS).toEqual({
      created: ["running", "failed"],
      running: ["waiting", "suspended", "completed", "failed"],
      waiting: ["running", "failed"],
      suspended: ["running", "failed"],
      completed: ["done"],
      done: [],
      failed: [],
    });
    expect(canTransition("done", "running")).toBe(false);
    expect(Object.values(ThreadState).filter(isResumable)).toEqual(["waiting", "suspended"]);
  });

  it("recovers as the spec says after a restart", () => {
    const f = (hasCheckpoint: boolean, hasPendingApproval: boolean) => ({
      hasCheckpoint,
      hasPendingApproval,
    });
    expect(recoveryTarget("waiting", f(true, true))).toBe(null);
    expect(recoveryTarget("running", f(true, false))).toBe("suspended");
    expect(recoveryTarget("running", f(false, false))).toBe("failed");
    expect(recoveryTarget("created", f(false, false))).toBe("failed");
    expect(recoveryTarget("suspended", f(true, false))).toBe(null);
    expect(recoveryTarget("done", f(true, false))).toBe(null);
  });

  it("pins the event types", () => {
    expect(Object.values(ThreadEvent)).toEqual([
      "thread.created",
      "thread.state_changed",
      "thread.message",
      "thread.llm_completed",
      "thread.action_completed",
      "thread.approval_requested",
      "thread.approval_decided",
      "thread.skill_activated",
      "thread.step_completed",
      "thread.code_step",
      "thread.event",
      "thread.cancel_requested",
      "thread.message_injected",
      "thread.transition_requested",
      "thread.skills_active",
      "grant.revoked",
      "orchestrator.fallback",
      "orchestrator.saved",
      "mission.fired",
      "document.saved",
      "proposal.decided",
    ]);
  });
});

describe("policy", () => {
  it("Deny beats RequireApproval beats Allow; rules match by name glob and effect", () => {
    const policy = {
      default: "allow" as const,
      rules: [
        { action: "git__*", decision: "require_approval" as const },
        { effect: "write_external" as const, decision: "require_approval" as const },
        { action: "git__push", decision: "deny" as const },
        { action: "git__status", decision: "allow" as const },
      ],
    };
    expect(evaluatePolicy(policy, "git__push", "unknown").decision).toBe("deny");
    expect(evaluatePolicy(policy, "git__status", "read_only").decision).toBe("require_approval");
    expect(evaluatePolicy(policy, "mail__send", "write_external").decision).toBe("require_approval");
    expect(evaluatePolicy(policy, "mail__read", "read_only").decision).toBe("allow");
    expect(evaluatePolicy(policy, "git__log", "read_only", { granted: true })).toMatchObject({
      decision: "allow",
      granted: true,
    });
    expect(evaluatePolicy(policy, "git__push", "unknown", { granted: true }).decision).toBe("deny");
    expect(evaluatePolicy({ default: "require_approval", rules: [] }, "x", "unknown").decision).toBe(
      "require_approval",
    );
  });

  it("globs are literal apart from *", () => {
    expect(globMatch("a.b*", "a.bc")).toBe(true);
    expect(globMatch("a.b*", "axbc")).toBe(false);
    expect(globMatch("*", "anything")).toBe(true);
  });
});
