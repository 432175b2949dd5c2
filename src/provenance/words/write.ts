/**
 * The words flows' functions (spec §3.2, §3.3): `note`, `reference add`, `reference mark`. Each
 * runs in the ledger's one write transaction: every check first, then the rows, so a refusal
 * writes nothing. Text is redacted like every text the ledger stores.
 */

import { ErrorCode, RatchetError } from "../../core/index.js";
import type { LedgerCore } from "../../ledger/core.js";
import { LedgerEvent } from "../../ledger/events.js";
import type { OpContext } from "../../ledger/flow.js";
import type { Store } from "../../store/index.js";
import { evidenceLevel } from "../evidence.js";
import { insertChained } from "../rows.js";
import type { NodeSource } from "../types.js";
import type { NoteInput, ReferenceAddInput, ReferenceMarkInput } from "./inputs.js";
import { SqlWordStore } from "./store.js";
import { type Verdict, verifiabilityOf } from "./types.js";

/** The word store on the ledger's database, on the ledger's clock. */
export function wordStoreOf(l: LedgerCore): SqlWordStore {
  return new SqlWordStore(l.store, () => l.now());
}

function bad(field: string, message: string): never {
  throw new RatchetError(ErrorCode.InvalidValue, `field \`${field}\`: ${message}; nothing written`, {
    field,
  });
}

function requireProject(l: LedgerCore, name: string): void {
  if (!l.store.getProject(name))
    throw new RatchetError(
      ErrorCode.ProjectNotFound,
      `field \`project\`: project ${name} is not registered (run \`ratchet project add ${name}\`); nothing written`,
      { field: "project" },
    );
}

/** The node source `note --node` resolves through (none: `--node` is refused with no_state_graph). */
export type NodeSourceFactory = (store: Store) => NodeSource | undefined;

/** `note`: the utterance, one reference per ref, and with `node` a stated reason over the whole note. */
export function recordNote(l: LedgerCore, input: NoteInput, ctx: OpContext, nodeSourceOf: NodeSourceFactory) {
  const words = wordStoreOf(l);
  const text = l.redactor.redact(input.text);
  return l.store.tx(() => {
    if (input.project !== undefined) requireProject(l, input.project);
    const plan = input.plan_id !== undefined ? l.requirePlan(input.plan_id) : undefined;
    const planProject = plan?.project && plan.project !== "none" ? plan.project : null;
    const project =
      input.project ?? (ctx.cwd ? words.projectForPath(ctx.cwd) : undefined) ?? planProject ?? null;
    if (plan && planProject && project && planProject !== project)
      bad("plan_id", `plan ${plan.plan_id} belongs to project ${planProject}, not ${project}`);
    for (const [i, r] of (input.refs ?? []).entries())
      if (r.kind === "verbal" && r.uri !== undefined)
        bad(`refs[${i}].uri`, "a verbal source has no uri (say it in the label, or pick another kind)");
    let node: { node_key: string; run_id: number } | undefined;
    if (input.node !== undefined) {
      if (!project) bad("node", "needs a project: give --project, or run from a registered project's repo");
      const source = nodeSourceOf(l.store);
      if (!source?.hasGraph(project))
        throw new RatchetError(
          ErrorCode.NoStateGraph,
          `field \`node\`: no state graph for project ${project}: analyse it first; nothing written`,
          { field: "node" },
        );
      const snap = source.resolve(project, input.node);
      if (!snap)
        throw new RatchetError(
          ErrorCode.UnknownNodeKey,
          `field \`node\`: ${input.node} is no node of project ${project}; nothing written`,
          { field: "node", unknown_keys: [input.node] },
        );
      node = { node_key: snap.node_key, run_id: snap.run_id };
    }
    const origin = ctx.interactive === true ? "human_cli" : "agent_cli";
    const utteranceId = words.recordUtterance({
      project,
      plan_id: plan?.plan_id ?? null,
      text,
      occurred_at: input.at,
      origin,
    });
    l.store.appendEvent({
      entityKind: "utterance",
      entityId: String(utteranceId),
      planId: plan?.plan_id ?? null,
      type: LedgerEvent.UtteranceRecorded,
      payload: { origin, project, chars: text.length },
    });
    let reasonId: number | null = null;
    if (node) {
      const now = l.now();
      reasonId = insertChained(l.store.sql, "prov_change_reasons", {
        project: project as string,
        node_key: node.node_key,
        run_id: node.run_id,
        plan_id: plan?.plan_id ?? "note",
        kind: input.kind ?? "organizational",
        role: "reason",
        verbatim_utterance_id: utteranceId,
        verbatim_start: 0,
        verbatim_end: text.length,
        rationale_visibility: "personal",
        statement_visibility: "shareable",
        state: "active",
        occurred_at: input.at,
        recorded_at: now,
        recorded_by: "human",
        tier: "stated",
      });
    }
    const referenceIds: number[] = [];
    const verifiability: { verifiability: string }[] = [];
    for (const r of input.refs ?? []) {
      const id = words.addReference({
        project,
        kind: r.kind,
        label: l.redactor.redact(r.label),
        uri: r.uri !== undefined ? l.redactor.redact(r.uri) : null,
        occurred_at: input.at,
      });
      words.link({ reference_id: id, utterance_id: utteranceId });
      if (reasonId !== null) words.link({ reference_id: id, reason_id: reasonId });
      verifiability.push({ verifiability: verifiabilityOf(r.kind, r.uri) });
      l.store.appendEvent({
        entityKind: "reference",
        entityId: String(id),
        planId: plan?.plan_id ?? null,
        type: LedgerEvent.ReferenceAdded,
        payload: { kind: r.kind, utterance_id: utteranceId, reason_id: reasonId },
      });
      referenceIds.push(id);
    }
    return {
      utterance_id: utteranceId,
      project,
      plan_id: plan?.plan_id ?? null,
      occurred_at: input.at,
      origin,
      reference_ids: referenceIds,
      reason_id: reasonId,
      ...(reasonId !== null
        ? {
            node_key: node?.node_key,
            evidence_level: evidenceLevel(
              { tier: "stated", verbatim_utterance_id: utteranceId },
              verifiability,
            ),
          }
        : {}),
    };
  });
}

function oneOfPair<T>(a: T | undefined, b: T | undefined, field: string, alias: string): T | undefined {
  if (a !== undefined && b !== undefined && a !== b)
    bad(field, `given twice with different values (${alias} says ${String(b)})`);
  return a ?? b;
}

/** `reference add`: one reference anchored on an existing reason or utterance. */
export function addReference(l: LedgerCore, input: ReferenceAddInput, ctx: OpContext) {
  const words = wordStoreOf(l);
  const utteranceId = oneOfPair(input.utterance, input.utterance_id, "utterance", "utterance_id");
  const reasonId = oneOfPair(input.reason, input.reason_id, "reason", "reason_id");
  if ((utteranceId === undefined) === (reasonId === undefined))
    throw new RatchetError(
      ErrorCode.SchemaViolation,
      `field \`${utteranceId === undefined ? "utterance" : "reason"}\`: give exactly one anchor, --reason ID or --utterance ID; nothing written`,
      { field: utteranceId === undefined ? "utterance" : "reason" },
    );
  if (input.kind === "verbal" && input.uri !== undefined)
    bad("uri", "a verbal source has no uri (say it in the label, or pick another kind)");
  return l.store.tx(() => {
    if (input.project !== undefined) requireProject(l, input.project);
    let anchorProject: string | null = null;
    if (utteranceId !== undefined) {
      const u = words.getUtterance(utteranceId);
      if (!u) bad("utterance", `utterance ${utteranceId} does not exist`);
      anchorProject = u.project;
    } else {
      const row = l.store.sql.get<{ project: string }>(
        "SELECT project FROM prov_change_reasons WHERE id = ?",
        [reasonId],
      );
      if (!row) bad("reason", `reason ${reasonId} does not exist`);
      anchorProject = row.project;
    }
    if (input.project !== undefined && anchorProject !== null && anchorProject !== input.project)
      bad("project", `the anchor belongs to project ${anchorProject}, not ${input.project}`);
    const project =
      input.project ?? anchorProject ?? (ctx.cwd ? words.projectForPath(ctx.cwd) : undefined) ?? null;
    const label = l.redactor.redact(input.label);
    const uri = input.uri !== undefined ? l.redactor.redact(input.uri) : null;
    const visibility = input.visibility ?? "shareable";
    const stance = input.stance ?? "supports";
    const id = words.addReference({
      project,
      kind: input.kind,
      label,
      uri,
      occurred_at: input.occurred_at,
      visibility,
    });
    if (utteranceId !== undefined) words.link({ reference_id: id, utterance_id: utteranceId, stance });
    else words.link({ reference_id: id, reason_id: reasonId as number, stance });
    l.store.appendEvent({
      entityKind: "reference",
      entityId: String(id),
      planId: null,
      type: LedgerEvent.ReferenceAdded,
      payload: { kind: input.kind, utterance_id: utteranceId ?? null, reason_id: reasonId ?? null },
    });
    return {
      reference_id: id,
      project,
      kind: input.kind,
      label,
      uri,
      occurred_at: input.occurred_at,
      verifiability: verifiabilityOf(input.kind, uri),
      visibility,
      stance,
      reason_id: reasonId ?? null,
      utterance_id: utteranceId ?? null,
    };
  });
}

const VERDICT_FLAGS = [
  ["ok", "ok"],
  ["gone", "gone"],
  ["moved", "moved"],
  ["no_access", "no_access"],
] as const;

/** `reference mark`: appends a check (a dead link is kept and dated, never deleted or downgraded). */
export function markReference(l: LedgerCore, input: ReferenceMarkInput) {
  const words = wordStoreOf(l);
  const given = new Set<Verdict>();
  if (input.verdict !== undefined) given.add(input.verdict);
  for (const [flag, v] of VERDICT_FLAGS) if (input[flag] === true) given.add(v);
  if (given.size !== 1)
    throw new RatchetError(
      ErrorCode.SchemaViolation,
      `field \`verdict\`: give exactly one of --ok, --gone, --moved, --no-access (got ${given.size ? [...given].join(", ") : "none"}); nothing written`,
      { field: "verdict" },
    );
  const verdict = [...given][0] as Verdict;
  return l.store.tx(() => {
    const ref = words.getReference(input.reference_id);
    if (!ref)
      throw new RatchetError(
        ErrorCode.NotFound,
        `field \`reference_id\`: reference ${input.reference_id} does not exist; nothing written`,
        { field: "reference_id" },
      );
    if (ref.verifiability === "verbal")
      bad("reference_id", `reference ${ref.id} is verbal: there is nothing to check`);
    const note = input.note !== undefined && input.note.trim() !== "" ? l.redactor.redact(input.note) : null;
    const check = words.addCheck(ref.id, verdict, note);
    l.store.appendEvent({
      entityKind: "reference",
      entityId: String(ref.id),
      planId: null,
      type: LedgerEvent.ReferenceChecked,
      payload: { verdict, check_id: check.id },
    });
    return {
      check_id: check.id,
      reference_id: ref.id,
      verdict,
      note,
      checked_at: check.checked_at,
      verifiability: ref.verifiability,
      label: ref.label,
      checks: words.checksOf(ref.id).length,
    };
  });
}
