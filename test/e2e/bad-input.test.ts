/**
 * Bad input through the built CLI, table-driven: every case must exit with its documented status
 * (DESIGN.md §6), say on stderr which field / file / id is wrong, end stdout with an `ok:false`
 * marker naming the op (write flows), and write NOTHING — the store and the workspace folder are
 * identical before and after.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import {
  assertBuilt,
  dump,
  listTree,
  makeWorkspace,
  publish,
  snapshot,
  type TestWorkspace,
} from "../helpers/cli.js";

// Generous bounds for a loaded 2-core machine (these spawn many processes); they are not timings.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

interface Ids {
  plan: string;
  /** COMPLETED */
  A: string;
  /** FAILED */
  B: string;
  /** PENDING */
  C: string;
  /** IN_PROGRESS */
  D: string;
  /** COMMAND, PENDING */
  E: string;
  review: string;
  dir: string;
}

type Input =
  | { stdin: string }
  | { file: string; name?: string }
  /** A path given as is (missing file, directory…). */
  | { path: string }
  | { none: true };

interface Case {
  args: string[];
  input: Input;
  status: number;
  /** What stderr must say (naming the field, file or id). */
  message: RegExp;
  /** The op on the `ok:false` marker (absent: a usage error, no marker). */
  op?: string;
  code?: string;
  field?: string;
}

const json = (v: unknown) => JSON.stringify(v);
const step = (title: string, type = "CODE") => ({ title, type });

const CASES: [string, (i: Ids) => Case][] = [
  // ── malformed input ──────────────────────────────────────────────────────────────────────
  [
    "malformed JSON in a file",
    () => ({
      args: ["step", "start"],
      input: { file: '{"step_id": "x",', name: "broken.json" },
      status: 2,
      message: /broken\.json is not valid JSON/,
      op: "start-step",
      code: "malformed_input",
    }),
  ],
  [
    "malformed JSON on stdin",
    () => ({
      args: ["step", "complete"],
      input: { stdin: "{step_id: x}" },
      status: 2,
      message: /standard input is not valid JSON/,
      op: "complete-step",
      code: "malformed_input",
    }),
  ],
  [
    "empty stdin",
    () => ({
      args: ["step", "fail"],
      input: { stdin: "" },
      status: 2,
      message: /standard input is not valid JSON/,
      op: "fail-step",
      code: "malformed_input",
    }),
  ],
  [
    "malformed JSON for publish (JSON-shaped text is parsed as JSON)",
    () => ({
      args: ["plan", "publish"],
      input: { file: '{"goal": "g", "steps": [}', name: "plan.json" },
      status: 2,
      message: /plan\.json is not valid JSON/,
      op: "publish-plan",
      code: "malformed_input",
    }),
  ],
  [
    "YAML garbage for publish, from a .yaml file",
    () => ({
      args: ["plan", "publish"],
      input: { file: "goal: [unclosed\nsteps: {{\n", name: "plan.yaml" },
      status: 2,
      message: /plan\.yaml is not valid YAML or JSON/,
      op: "publish-plan",
      code: "malformed_input",
    }),
  ],
  [
    "YAML garbage for publish, on stdin",
    () => ({
      args: ["plan", "publish"],
      input: { stdin: '\t\tgoal: "unterminated\nsteps: - x' },
      status: 2,
      message: /standard input is not valid YAML or JSON/,
      op: "publish-plan",
      code: "malformed_input",
    }),
  ],
  [
    "YAML that is a plain scalar, not a plan",
    () => ({
      args: ["plan", "publish"],
      input: { stdin: "just some words\n" },
      status: 2,
      message: /field `\(input\)`: must be a JSON object \(got "just some words"\)/,
      op: "publish-plan",
      field: "(input)",
    }),
  ],
  [
    "a JSON array instead of an object",
    () => ({
      args: ["step", "start"],
      input: { stdin: "[1, 2]" },
      status: 2,
      message: /field `\(input\)`: must be a JSON object \(got an array\)/,
      op: "start-step",
      field: "(input)",
    }),
  ],
  // ── schema violations ────────────────────────────────────────────────────────────────────
  [
    "unknown field",
    (i) => ({
      args: ["step", "start"],
      input: { stdin: json({ step_id: i.C, colour: "red" }) },
      status: 2,
      message: /field `colour`: unknown field \(allowed: step_id, /,
      op: "start-step",
      code: "schema_violation",
      field: "colour",
    }),
  ],
  [
    "unknown field inside a published step",
    () => ({
      args: ["plan", "publish"],
      input: { stdin: json({ goal: "g", steps: [{ ...step("t"), owner: "me" }] }) },
      status: 2,
      message: /field `steps\[0\]\.owner`: unknown field/,
      op: "publish-plan",
      field: "steps[0].owner",
    }),
  ],
  [
    "wrong type: a number for step_id",
    () => ({
      args: ["step", "start"],
      input: { stdin: json({ step_id: 42 }) },
      status: 2,
      message: /field `step_id`: must be a string \(got number 42\)/,
      op: "start-step",
      field: "step_id",
    }),
  ],
  [
    "wrong type: a string for a metric value",
    () => ({
      args: ["metric", "record"],
      input: { file: json({ name: "m", value: "twelve" }) },
      status: 2,
      message: /field `value`: must be a number or a numeric string \(got "twelve"\)/,
      op: "record-metric",
      field: "value",
    }),
  ],
  [
    "wrong type: a string for timeout_seconds (nothing runs)",
    (i) => ({
      args: ["step", "run"],
      input: { stdin: json({ step_id: i.E, type: "COMMAND", command: "touch ran", timeout_seconds: "1" }) },
      status: 2,
      message: /field `timeout_seconds`: must be a finite number/,
      op: "run-step",
      field: "timeout_seconds",
    }),
  ],
  [
    "wrong type: a fractional max_revisions",
    () => ({
      args: ["plan", "publish"],
      input: { stdin: json({ goal: "g", max_revisions: 1.5, steps: [step("t")] }) },
      status: 2,
      message: /field `max_revisions`: must be an integer/,
      op: "publish-plan",
      field: "max_revisions",
    }),
  ],
  [
    "wrong value: review-close outcome",
    (i) => ({
      args: ["plan", "review-close"],
      input: { stdin: json({ plan_id: i.plan, outcome: "maybe" }) },
      status: 2,
      message: /field `outcome`: must be one of pass, fail \(got "maybe"\)/,
      op: "agent-review-close",
      field: "outcome",
    }),
  ],
  [
    "missing required field: step_id",
    () => ({
      args: ["step", "complete"],
      input: { stdin: "{}" },
      status: 2,
      message: /field `step_id`: is required/,
      op: "complete-step",
      field: "step_id",
    }),
  ],
  [
    "missing required field: justification",
    (i) => ({
      args: ["step", "deviate"],
      input: { stdin: json({ parent_step_id: i.C, sub_steps: [step("x")] }) },
      status: 2,
      message: /field `justification`: is required/,
      op: "deviate",
      field: "justification",
    }),
  ],
  [
    "missing required field: goal",
    () => ({
      args: ["plan", "publish"],
      input: { stdin: json({ steps: [step("t")] }) },
      status: 2,
      message: /field `goal`: is required/,
      op: "publish-plan",
      field: "goal",
    }),
  ],
  [
    "missing required field: reason of raise-budget",
    (i) => ({
      args: ["plan", "raise-budget"],
      input: { stdin: json({ plan_id: i.plan, new_max: 9 }) },
      status: 2,
      message: /field `reason`: is required/,
      op: "raise-budget",
      field: "reason",
    }),
  ],
  [
    "empty steps",
    () => ({
      args: ["plan", "publish"],
      input: { stdin: json({ goal: "g", steps: [] }) },
      status: 2,
      message: /field `steps`: must have at least one item/,
      op: "publish-plan",
      field: "steps",
    }),
  ],
  [
    "empty sub_steps",
    (i) => ({
      args: ["step", "deviate"],
      input: { stdin: json({ parent_step_id: i.C, justification: "j", sub_steps: [] }) },
      status: 2,
      message: /field `sub_steps`: must have at least one item/,
      op: "deviate",
      field: "sub_steps",
    }),
  ],
  [
    "unknown step type in publish (after a valid one: the whole plan is refused)",
    () => ({
      args: ["plan", "publish"],
      input: { stdin: json({ goal: "g", steps: [step("ok"), step("bad", "DANCE")] }) },
      status: 2,
      message:
        /field `steps\[1\]\.type`: must be one of COMMAND, CODE, TEST, THINKING, DOCUMENTATION, ANALYSIS, SUB_AGENT \(got "DANCE"\)/,
      op: "publish-plan",
      field: "steps[1].type",
    }),
  ],
  [
    "unknown step type in deviate",
    (i) => ({
      args: ["step", "deviate"],
      input: { stdin: json({ parent_step_id: i.C, justification: "j", sub_steps: [step("x", "NAP")] }) },
      status: 2,
      message: /field `sub_steps\[0\]\.type`: must be one of/,
      op: "deviate",
      field: "sub_steps[0].type",
    }),
  ],
  [
    "new_max not above the current ceiling",
    (i) => ({
      args: ["plan", "raise-budget"],
      input: { stdin: json({ plan_id: i.plan, new_max: 5, reason: "r" }) },
      status: 2,
      message: /field `new_max`: 5 must be above the current ceiling 5/,
      op: "raise-budget",
      field: "new_max",
    }),
  ],
  // ── unknown ids ──────────────────────────────────────────────────────────────────────────
  [
    "unknown step (start)",
    (i) => ({
      args: ["step", "start"],
      input: { stdin: json({ step_id: `${i.plan}-Z` }) },
      status: 3,
      message: new RegExp(`step ${i.plan}-Z not found`),
      op: "start-step",
      code: "step_not_found",
    }),
  ],
  [
    "unknown step (run: nothing is spawned)",
    (i) => ({
      args: ["step", "run"],
      input: { stdin: json({ step_id: `${i.plan}-Z`, type: "COMMAND", command: "touch ran" }) },
      status: 3,
      message: new RegExp(`step ${i.plan}-Z not found`),
      op: "run-step",
    }),
  ],
  [
    "unknown step (log)",
    () => ({
      args: ["step", "log"],
      input: { stdin: json({ step_id: "ghost-step", text: "t" }) },
      status: 3,
      message: /step ghost-step not found/,
      op: "append-log",
    }),
  ],
  [
    "unknown step (heartbeat)",
    () => ({
      args: ["step", "heartbeat"],
      input: { stdin: json({ step_id: "ghost-step" }) },
      status: 3,
      message: /step ghost-step not found/,
      op: "heartbeat",
    }),
  ],
  [
    "unknown parent step (deviate)",
    () => ({
      args: ["step", "deviate"],
      input: { stdin: json({ parent_step_id: "ghost-parent", justification: "j", sub_steps: [step("x")] }) },
      status: 3,
      message: /step ghost-parent not found \(field `parent_step_id`\)/,
      op: "deviate",
    }),
  ],
  [
    "unknown plan (record-skill)",
    () => ({
      args: ["plan", "record-skill"],
      input: { stdin: json({ plan_id: "ghost-plan", name: "n", source: "explicit-mention" }) },
      status: 3,
      message: /plan ghost-plan not found/,
      op: "record-skill",
      code: "plan_not_found",
    }),
  ],
  [
    "unknown step of a known plan (record-skill)",
    (i) => ({
      args: ["plan", "record-skill"],
      input: {
        stdin: json({ plan_id: i.plan, step_id: "ghost-step", name: "n", source: "explicit-mention" }),
      },
      status: 3,
      message: /step ghost-step not found/,
      op: "record-skill",
    }),
  ],
  [
    "unknown plan (metric)",
    () => ({
      args: ["metric", "record"],
      input: { stdin: json({ name: "m", value: 1, plan_id: "ghost-plan" }) },
      status: 3,
      message: /plan ghost-plan not found/,
      op: "record-metric",
    }),
  ],
  [
    "unknown plan (finish)",
    () => ({
      args: ["plan", "finish"],
      input: { stdin: json({ plan_id: "ghost-plan" }) },
      status: 3,
      message: /plan ghost-plan not found/,
      op: "finish-plan",
    }),
  ],
  [
    "unknown plan (raise-budget)",
    () => ({
      args: ["plan", "raise-budget"],
      input: { stdin: json({ plan_id: "ghost-plan", new_max: 9, reason: "r" }) },
      status: 3,
      message: /plan ghost-plan not found/,
      op: "raise-budget",
    }),
  ],
  [
    "unknown plan (abandon)",
    () => ({
      args: ["plan", "abandon"],
      input: { stdin: json({ plan_id: "ghost-plan", reason: "r" }) },
      status: 3,
      message: /plan ghost-plan not found/,
      op: "abandon-plan",
    }),
  ],
  [
    "unknown plan (review-close)",
    () => ({
      args: ["plan", "review-close"],
      input: { stdin: json({ plan_id: "ghost-plan", outcome: "pass" }) },
      status: 3,
      message: /plan ghost-plan not found/,
      op: "agent-review-close",
    }),
  ],
  [
    "unknown plan (sweep)",
    () => ({
      args: ["plan", "sweep"],
      input: { stdin: json({ plan_id: "ghost-plan" }) },
      status: 3,
      message: /plan ghost-plan not found/,
      op: "sweep",
    }),
  ],
  [
    "unregistered project (publish)",
    () => ({
      args: ["plan", "publish"],
      input: { stdin: json({ goal: "g", project: "ghost-project", steps: [step("t")] }) },
      status: 3,
      message: /field `project`: project ghost-project is not registered/,
      op: "publish-plan",
      code: "project_not_found",
    }),
  ],
  // ── illegal transitions (soft refusals) ──────────────────────────────────────────────────
  [
    "complete a PENDING step",
    (i) => ({
      args: ["step", "complete"],
      input: { stdin: json({ step_id: i.C, summary: "s" }) },
      status: 4,
      message: new RegExp(`step ${i.C} cannot move from PENDING to COMPLETED \\(start it first\\)`),
      op: "complete-step",
      code: "illegal_transition",
    }),
  ],
  [
    "start a COMPLETED step",
    (i) => ({
      args: ["step", "start"],
      input: { stdin: json({ step_id: i.A }) },
      status: 4,
      message: /cannot move from COMPLETED to IN_PROGRESS \(COMPLETED is immutable\)/,
      op: "start-step",
    }),
  ],
  [
    "start an IN_PROGRESS step again",
    (i) => ({
      args: ["step", "start"],
      input: { stdin: json({ step_id: i.D }) },
      status: 4,
      message: new RegExp(`step ${i.D} cannot move from IN_PROGRESS to IN_PROGRESS`),
      op: "start-step",
    }),
  ],
  [
    "fail a FAILED step",
    (i) => ({
      args: ["step", "fail"],
      input: { stdin: json({ step_id: i.B, reason: "again" }) },
      status: 4,
      message: /cannot move from FAILED to FAILED \(FAILED is terminal/,
      op: "fail-step",
    }),
  ],
  [
    "complete a FAILED step",
    (i) => ({
      args: ["step", "complete"],
      input: { stdin: json({ step_id: i.B }) },
      status: 4,
      message: /cannot move from FAILED to COMPLETED/,
      op: "complete-step",
    }),
  ],
  [
    "run a COMPLETED step (nothing is spawned)",
    (i) => ({
      args: ["step", "run"],
      input: { stdin: json({ step_id: i.A, type: "COMMAND", command: "touch ran" }) },
      status: 4,
      message: /cannot move from COMPLETED to IN_PROGRESS/,
      op: "run-step",
    }),
  ],
  [
    "complete the review step directly",
    (i) => ({
      args: ["step", "complete"],
      input: { stdin: json({ step_id: i.review }) },
      status: 4,
      message: /is the review step: it is closed by the roll-up/,
      op: "complete-step",
    }),
  ],
  [
    "review-close without a hand-off",
    (i) => ({
      args: ["plan", "review-close"],
      input: { stdin: json({ plan_id: i.plan, outcome: "pass" }) },
      status: 4,
      message: /review step is PENDING, not NEEDS_REVIEW/,
      op: "agent-review-close",
    }),
  ],
  [
    "heartbeat a PENDING step",
    (i) => ({
      args: ["step", "heartbeat"],
      input: { stdin: json({ step_id: i.C }) },
      status: 4,
      message: /is PENDING, not IN_PROGRESS/,
      op: "heartbeat",
    }),
  ],
  [
    "complete a COMMAND step (5)",
    (i) => ({
      args: ["step", "complete"],
      input: { stdin: json({ step_id: i.E }) },
      status: 5,
      message: new RegExp(`step ${i.E} is a COMMAND step`),
      op: "complete-step",
      code: "complete_on_command",
    }),
  ],
  // ── unreadable input ─────────────────────────────────────────────────────────────────────
  [
    "a file that does not exist",
    (i) => ({
      args: ["step", "start"],
      input: { path: join(i.dir, "no-such-input.json") },
      status: 2,
      message: /cannot read input file .*no-such-input\.json: ENOENT/,
      op: "start-step",
      code: "unreadable_input",
    }),
  ],
  [
    "a directory as input",
    (i) => ({
      args: ["plan", "publish"],
      input: { path: join(i.dir, "a-folder") },
      status: 2,
      message: /cannot read input file .*a-folder: not a regular file/,
      op: "publish-plan",
      code: "unreadable_input",
    }),
  ],
  [
    "a directory as a batch",
    (i) => ({
      args: ["step", "apply"],
      input: { path: join(i.dir, "a-folder") },
      status: 2,
      message: /cannot read input file .*a-folder: not a regular file/,
      op: "apply",
    }),
  ],
  [
    "no input argument (usage)",
    () => ({
      args: ["step", "start"],
      input: { none: true },
      status: 2,
      // Write-flow commands parse their own arguments (file, -, or flags): a usage marker.
      message: /missing input \(a JSON\/YAML file path, - for stdin, or the fields as flags\)/,
      op: "start-step",
      code: "usage",
    }),
  ],
  [
    "an unknown option (usage)",
    () => ({
      args: ["step", "start", "--colour", "red"],
      input: { stdin: "{}" },
      status: 2,
      message: /unknown flag --colour for `ratchet step start`/,
      op: "start-step",
      code: "usage",
    }),
  ],
];

describe("bad input is refused with its status, a clear message, and nothing written", () => {
  let ws: TestWorkspace;
  let ids: Ids;

  beforeAll(async () => {
    assertBuilt();
    ws = await makeWorkspace("ratchet-e2e-badinput-");
    const p = await publish(ws, {
      goal: "Bad inputs",
      steps: [step("a", "THINKING"), step("b", "THINKING"), step("c"), step("d"), step("e", "COMMAND")],
    });
    const [A, B, C, D, E] = p.step_ids as [string, string, string, string, string];
    ids = { plan: p.plan_id, A, B, C, D, E, review: p.review_step_id, dir: ws.dir };
    const ops = [
      { op: "start-step", step_id: A },
      { op: "complete-step", step_id: A },
      { op: "start-step", step_id: B },
      { op: "fail-step", step_id: B, reason: "setup" },
      { op: "start-step", step_id: D, lease_seconds: 3600 },
    ];
    const r = await ws.run(["step", "apply", "-"], { input: ops.map((o) => JSON.stringify(o)).join("\n") });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    mkdirSync(join(ws.dir, "a-folder"));
  });
  afterAll(() => ws?.remove());

  test.each(CASES)("%s", async (_name, make) => {
    const c = make(ids);
    let args = c.args;
    let stdin: string | undefined;
    if ("stdin" in c.input) {
      args = [...args, "-"];
      stdin = c.input.stdin;
    } else if ("file" in c.input) {
      args = [...args, ws.input(c.input.name ?? "input.json", c.input.file)];
    } else if ("path" in c.input) {
      args = [...args, c.input.path];
    }
    const before = { snap: snapshot(ws), rows: dump(ws), tree: listTree(ws.ratchetDir) };

    const r = await ws.run(args, stdin === undefined ? {} : { input: stdin });

    expect(r.status, `stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(c.status);
    expect(r.stderr).toMatch(c.message);
    if (c.op === undefined) {
      expect(r.marker).toBeUndefined(); // a usage error prints help, not a marker
    } else {
      expect(r.marker).toMatchObject({ ok: false, op: c.op, exit_status: c.status });
      expect(String(r.marker?.error)).toMatch(c.message);
      if (c.code) expect(r.marker?.code).toBe(c.code);
      if (c.field) expect(r.marker?.field).toBe(c.field);
      if (c.status >= 4) expect(r.marker).toMatchObject({ accepted: false });
      else expect(r.marker?.accepted).toBeUndefined();
    }
    // Nothing written: same rows, same files (no blobs, no run folders), no command ran.
    expect(snapshot(ws)).toEqual(before.snap);
    expect(dump(ws)).toEqual(before.rows);
    const tree = listTree(ws.ratchetDir).filter((f) => !/ratchet\.db-(wal|shm)$/.test(f));
    expect(tree).toEqual(before.tree.filter((f) => !/ratchet\.db-(wal|shm)$/.test(f)));
    expect(listTree(ws.dir)).not.toContain("ran");
  });
});
