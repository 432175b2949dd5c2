/**
 * The words area's write flows, registered in the ledger's `FLOWS` (so the CLI, flag style,
 * `POST /api/flows/<op>`, MCP and `step apply` get them): `note`, `reference-add`,
 * `reference-mark`. The prompt hook writes through the same `WordStore` without the flow machinery.
 */
import { ErrorCode } from "../../core/index.js";
import { defineFlow } from "../../ledger/flow.js";
import { nodeSourceFor } from "../node-source.js";
import { NoteInput, ReferenceAddInput, ReferenceMarkInput } from "./inputs.js";
import { addReference, markReference, recordNote } from "./write.js";

export const NOTE_FLOW = defineFlow({
  op: "note",
  command: ["note", "add"],
  summary:
    "Record words said elsewhere (an utterance at --at), its sources, and with node a stated reason spanning the whole note.",
  input: NoteInput,
  positional: "text",
  example: {
    text: "Finance reconciles by fiscal week; keep the weekly grain.",
    at: "2026-11-30 14:00",
    refs: [{ kind: "meeting", label: "finance sync 2026-11-30" }],
  },
  refusals: [
    { code: ErrorCode.ProjectNotFound, exit: 3, when: "`project` names no registered project" },
    { code: ErrorCode.PlanNotFound, exit: 3, when: "`plan_id` names no plan" },
    {
      code: ErrorCode.InvalidValue,
      exit: 2,
      when: "`node` without a project, a verbal ref with a uri, a plan of another project",
    },
    { code: ErrorCode.NoStateGraph, exit: 10, when: "`node` given and the project has no node source" },
    { code: ErrorCode.UnknownNodeKey, exit: 10, when: "`node` resolves to no node of the project" },
  ],
  result: [
    "utterance_id",
    "project",
    "plan_id",
    "occurred_at",
    "origin",
    "reference_ids",
    "reason_id",
    "node_key?",
    "evidence_level?",
  ],
  run: (l, i, c) => recordNote(l, i, c, nodeSourceFor),
});

export const REFERENCE_ADD_FLOW = defineFlow({
  op: "reference-add",
  command: ["reference", "add"],
  summary:
    "Register a source (a pointer: kind, label, when, uri) backing an existing reason or utterance; verifiability is derived.",
  input: ReferenceAddInput,
  example: {
    kind: "email",
    label: "CFO: fiscal weeks",
    occurred_at: "2026-11-28",
    utterance: 42,
    uri: "https://mail.example/t/123",
  },
  refusals: [
    { code: ErrorCode.SchemaViolation, exit: 2, when: "no anchor, or both --reason and --utterance" },
    {
      code: ErrorCode.InvalidValue,
      exit: 2,
      when: "the anchor does not exist (spec §3.3: 2, not 3), or a verbal kind with a uri",
    },
    { code: ErrorCode.ProjectNotFound, exit: 3, when: "`project` names no registered project" },
  ],
  result: [
    "reference_id",
    "project",
    "kind",
    "label",
    "uri",
    "occurred_at",
    "verifiability",
    "visibility",
    "stance",
    "reason_id",
    "utterance_id",
  ],
  run: (l, i, c) => addReference(l, i, c),
});

export const REFERENCE_MARK_FLOW = defineFlow({
  op: "reference-mark",
  command: ["reference", "mark"],
  summary:
    "Record a check of a source (--ok, --gone, --moved or --no-access): appended and dated, never deleted.",
  input: ReferenceMarkInput,
  positional: "reference_id",
  example: { reference_id: 9, gone: true, note: "thread deleted" },
  refusals: [
    { code: ErrorCode.SchemaViolation, exit: 2, when: "not exactly one verdict" },
    { code: ErrorCode.NotFound, exit: 3, when: "the reference does not exist" },
    { code: ErrorCode.InvalidValue, exit: 2, when: "the reference is verbal (nothing to check)" },
  ],
  result: ["check_id", "reference_id", "verdict", "note", "checked_at", "verifiability", "label", "checks"],
  run: (l, i) => markReference(l, i),
});
