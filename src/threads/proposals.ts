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
import { compileThreadsConfig } from "./config.js";
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

/** The test threads' tools; every call is counted, so a check can say which tool ran. */
function selfTestActions(ran: { name: string; args: Record<string, unknown> }[]): ActionProvider {
  return {
    list: async () => [
      {
        name: "selftest_echo",
        description: "Returns its text.",
        parameters: { type: "object", properties: { text: { type: "string" } } },
        effect: EffectType.ReadOnly,
      },
      {
        name: "selftest_write",
        description: "Writes its text (needs an approval).",
        parameters: { type: "object", properties: { text: { type: "string" } } },
        effect: EffectType.WriteLocal,
      },
    ],
    call: async (name, args) => {
      ran.push({ name, args });
      return { echoed: args.text ?? null };
    },
    close: async () => {},
  };
}

const reply = (text: string, calls: { id: string; name: string; args: unknown }[] = []) => ({
  text,
  toolCalls: calls,
  usage: { inputTokens: 1, outputTokens: 1 },
  finishReason: calls.length ? ("tool-calls" as const) : ("stop" as const),
});

interface SelfTestCase {
  name: string;
  replies: Omit<Completion, "attempts">[];
  /** The tools that must have run, in order. */
  ran: string[];
  /** Text the answer must contain. */
  answer: string;
  approve?: boolean;
}

const CASES: SelfTestCase[] = [
  { name: "plain answer", replies: [reply("42")], ran: [], answer: "42" },
  {
    name: "one tool call then an answer",
    replies: [
      reply("", [{ id: "call_selftest_1", name: "selftest_echo", args: { text: "ping" } }]),
      reply("pong"),
    ],
    ran: ["selftest_echo"],
    answer: "pong",
  },
  {
    name: "parallel tool calls",
    replies: [
      reply("", [
        { id: "call_selftest_p1", name: "selftest_echo", args: { text: "a" } },
        { id: "call_selftest_p2", name: "selftest_echo", args: { text: "b" } },
      ]),
      reply("both echoed"),
    ],
    ran: ["selftest_echo", "selftest_echo"],
    answer: "both echoed",
  },
  {
    name: "approval round trip",
    replies: [
      reply("", [{ id: "call_selftest_w", name: "selftest_write", args: { text: "w" } }]),
      reply("written"),
    ],
    ran: ["selftest_write"],
    answer: "written",
    approve: true,
  },
];

/** How long a test thread may wait for the self-test's own approval. */
const SELF_TEST_APPROVAL_WAIT_MS = 10_000;

/**
 * Runs the engine's test threads with `code` as the orchestrator and checks behaviour, not just
 * completion: the answer text, that the expected tools ran (and only once), exactly one result
 * per call id, and an approval round trip. Returns the failures, first failing check first.
 */
export async function selfTestOrchestrator(code: string, vm: VmFactory = montyVm): Promise<string[]> {
  const failures: string[] = [];
  const store = new SqliteStore(openSqlite(":memory:", { create: true }));
  try {
    for (const c of CASES) {
      const ran: { name: string; args: Record<string, unknown> }[] = [];
      const svc = new ThreadService({
        store,
        vm,
        config: compileThreadsConfig({
          policy: { default: "allow", rules: [{ action: "selftest_write", decision: "require_approval" }] },
        }),
        model: () => cannedModel(c.replies),
        actions: () => selfTestActions(ran),
        missions: false,
        approvalWaitMs: SELF_TEST_APPROVAL_WAIT_MS,
      });
      svc.versions.save(code, vm, { self_test: true });
      const row = svc.create(`self-test: ${c.name}`, { kind: "test" });
      const running = svc.run(row.thread_id);
      let approved = false;
      if (c.approve) {
        for (let i = 0; i < 200 && !approved; i++) {
          const t = svc.threads.require(row.thread_id);
          if (t.state === "waiting" && svc.threads.pendingApprovals(row.thread_id).length > 0) {
            svc.approve(row.thread_id, { by: "self-test" });
            approved = true;
          } else if (t.state !== "running" && t.state !== "created") break;
          else await new Promise((r) => setTimeout(r, 25));
        }
      }
      const r = await running;
      const check = selfTestCheck(c, svc, r, ran, approved);
      if (check) failures.push(`${c.name}: ${check}`);
    }
  } finally {
    store.close();
  }
  return failures;
}

/** The first failing check of one test thread, or null. */
function selfTestCheck(
  c: SelfTestCase,
  svc: ThreadService,
  r: Awaited<ReturnType<ThreadService["run"]>>,
  ran: { name: string }[],
  approved: boolean,
): string | null {
  if (c.approve && !approved)
    return `the call needing an approval never waited for one (thread ${r.thread.state})`;
  if (r.outcome !== "completed") return `thread ${r.outcome}: ${r.thread.reason ?? ""}`;
  const msgs = svc.threads.messages(r.thread.thread_id);
  const calls = msgs.flatMap((m) => (m.tool_calls ? (JSON.parse(m.tool_calls) as { id: string }[]) : []));
  for (const call of calls) {
    const n = msgs.filter((m) => m.role === "tool" && m.call_id === call.id).length;
    if (n !== 1) return `call ${call.id} has ${n} result messages (want 1)`;
  }
  const names = ran.map((x) => x.name);
  if (names.join(",") !== c.ran.join(","))
    return c.ran.length && names.length === 0
      ? `the expected tool ${c.ran[0]} did not run`
      : `tools ran [${names.join(", ")}], want [${c.ran.join(", ")}]`;
  const answer = r.thread.final_result ?? "";
  if (!answer.includes(c.answer))
    return `the answer is ${JSON.stringify(answer)}, want text containing ${JSON.stringify(c.answer)}`;
  return null;
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
