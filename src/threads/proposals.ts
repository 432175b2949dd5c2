/**
 * Changes a mission proposed (a new orchestrator version, a system prompt) are applied only when a
 * person accepts them, and an orchestrator only after it parses and passes the engine's own test
 * threads: canned conversations run in a throwaway in-memory store with the proposed code as the
 * active version (a tool call that must get exactly one result, then a final answer).
 */
import { ErrorCode, RatchetError } from "../core/index.js";
import type { Completion, CompletionRequest, ModelClient } from "../model/index.js";
import { openSqlite, SqliteStore } from "../store/index.js";
import type { ActionProvider } from "./actions.js";
import { DocKind, type DocumentRow, parseMeta } from "./documents.js";
import { ThreadEvent } from "./events.js";
import { EffectType } from "./policy.js";
import { ThreadService } from "./service.js";
import { montyVm, type VmFactory } from "./vm.js";

/** A model that replays a fixed conversation: the engine's own test threads, not a provider. */
function cannedModel(replies: Omit<Completion, "attempts">[]): ModelClient {
  let i = 0;
  return {
    model: "ratchet:self-test",
    async complete(_req: CompletionRequest): Promise<Completion> {
      const r = replies[Math.min(i++, replies.length - 1)]!;
      return { ...r, attempts: 1 };
    },
  };
}

const SELF_TEST_ACTION: ActionProvider = {
  list: async () => [
    {
      name: "selftest_echo",
      description: "Returns its text.",
      parameters: { type: "object", properties: { text: { type: "string" } } },
      effect: EffectType.ReadOnly,
    },
  ],
  call: async (_n, args) => ({ echoed: args.text ?? null }),
  close: async () => {},
};

/** Runs the engine's test threads with `code` as the orchestrator; returns failures (empty = passed). */
export async function selfTestOrchestrator(code: string, vm: VmFactory = montyVm): Promise<string[]> {
  const failures: string[] = [];
  const store = new SqliteStore(openSqlite(":memory:", { create: true }));
  try {
    const cases: { name: string; replies: Omit<Completion, "attempts">[] }[] = [
      {
        name: "plain answer",
        replies: [
          { text: "42", toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 }, finishReason: "stop" },
        ],
      },
      {
        name: "one tool call then an answer",
        replies: [
          {
            text: "",
            toolCalls: [{ id: "call_selftest_1", name: "selftest_echo", args: { text: "ping" } }],
            usage: { inputTokens: 1, outputTokens: 1 },
            finishReason: "tool-calls",
          },
          { text: "pong", toolCalls: [], usage: { inputTokens: 1, outputTokens: 1 }, finishReason: "stop" },
        ],
      },
    ];
    for (const c of cases) {
      const svc = new ThreadService({
        store,
        vm,
        model: () => cannedModel(c.replies),
        actions: () => SELF_TEST_ACTION,
        missions: false,
      });
      svc.versions.save(code, vm, { self_test: true });
      const r = await svc.start(`self-test: ${c.name}`, { kind: "test" });
      if (r.outcome !== "completed") {
        failures.push(`${c.name}: thread ${r.outcome}: ${r.thread.reason ?? ""}`);
        continue;
      }
      const msgs = svc.threads.messages(r.thread.thread_id);
      const calls = msgs.flatMap((m) => (m.tool_calls ? (JSON.parse(m.tool_calls) as { id: string }[]) : []));
      for (const call of calls) {
        const n = msgs.filter((m) => m.role === "tool" && m.call_id === call.id).length;
        if (n !== 1) failures.push(`${c.name}: call ${call.id} has ${n} result messages (want 1)`);
      }
    }
  } finally {
    store.close();
  }
  return failures;
}

export function listProposals(svc: ThreadService): DocumentRow[] {
  return svc.docs.list(DocKind.Proposal);
}

/**
 * Accepts a pending proposal: an orchestrator after a syntax check and the test threads (saved as
 * the next version), a prompt as a `prompt` document.
 * @throws RatchetError `not_found`, `illegal_transition` (already decided), `invalid_value` (does
 *   not parse), `work_failed` (test threads failed).
 */
export async function acceptProposal(
  svc: ThreadService,
  docId: string,
  vm: VmFactory = montyVm,
): Promise<{ version?: number; docId?: string }> {
  const { doc, meta } = pendingProposal(svc, docId);
  if (meta.target === "orchestrator") {
    try {
      vm.check(doc.content, "orchestrator.py");
    } catch (e) {
      decide(svc, doc, { ...meta, status: "rejected", rejected_because: (e as Error).message });
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `proposal ${docId} does not parse: ${(e as Error).message}`,
        { docId },
      );
    }
    const failures = await selfTestOrchestrator(doc.content, vm);
    if (failures.length > 0) {
      decide(svc, doc, { ...meta, status: "rejected", rejected_because: failures.join("; ") });
      throw new RatchetError(
        ErrorCode.WorkFailed,
        `proposal ${docId} failed the test threads: ${failures.join("; ")}`,
        { docId },
      );
    }
    return svc.threads.tx(() => {
      pendingProposal(svc, docId); // still pending once the test threads are done
      const v = svc.versions.save(doc.content, vm, { proposal: docId, reason: meta.reason ?? null });
      decide(svc, doc, { ...meta, status: "accepted", version: v.version });
      return { version: v.version };
    });
  }
  return svc.threads.tx(() => {
    const saved = svc.docs.insert({
      kind: DocKind.Prompt,
      title: "system_prompt",
      content: doc.content,
      meta: { proposal: docId },
    });
    decide(svc, doc, { ...meta, status: "accepted", prompt_doc: saved.doc_id });
    return { docId: saved.doc_id };
  });
}

/** Rejects a pending proposal with a reason. */
export function rejectProposal(svc: ThreadService, docId: string, reason: string): void {
  svc.threads.tx(() => {
    const { doc, meta } = pendingProposal(svc, docId);
    decide(svc, doc, { ...meta, status: "rejected", rejected_because: reason });
  });
}

/**
 * The proposal `docId` and its metadata, while it is still pending.
 * @throws RatchetError `not_found`, or `illegal_transition` when it was already decided.
 */
function pendingProposal(
  svc: ThreadService,
  docId: string,
): { doc: DocumentRow; meta: Record<string, unknown> } {
  const doc = svc.docs.get(docId);
  if (!doc || doc.kind !== DocKind.Proposal)
    throw new RatchetError(ErrorCode.NotFound, `proposal ${docId} not found`, { docId });
  const meta = parseMeta(doc);
  if (meta.status !== "pending")
    throw new RatchetError(
      ErrorCode.IllegalTransition,
      `proposal ${docId} was already ${String(meta.status)}`,
      { docId },
    );
  return { doc, meta };
}

/** Records a decision on a proposal and its event, in one transaction. */
function decide(svc: ThreadService, doc: DocumentRow, meta: Record<string, unknown>): void {
  svc.threads.tx(() => {
    svc.docs.updateMeta(doc.doc_id, meta);
    svc.threads.store.appendEvent({
      entityKind: "document",
      entityId: doc.doc_id,
      type: ThreadEvent.ProposalDecided,
      payload: { status: meta.status, target: meta.target ?? null },
    });
  });
}
