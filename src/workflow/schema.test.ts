import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isRatchetError, type RatchetError } from "../core/errors.js";
import {
  loadWorkflow,
  normaliseSecretName,
  normaliseVariableName,
  parseWorkflow,
  parseWorkflowText,
} from "./schema.js";

const tmp = mkdtempSync(join(tmpdir(), "ratchet-schema-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const FULL = `
id: sales-report
description: Weekly sales report
variables:
  region:
    default: eu
    description: Sales region
  VAR_LIMIT:
    default: 5
  week: {}
secrets: [SECRET_API_TOKEN, db_password]
defaults:
  use_code_execution_mode: true
  declared_execution_mode: code_exec
groups:
  us:
    REGION: us
    week: 12
steps:
  - id: fetch
    description: Fetch the orders
    agent_configs:
      declared_execution_mode: learn_code
      declared_execution_mode_reason: Stable API sequence
      lock_code: true
      learnings_access: read-write
      learning_objective: faster pagination
    validation:
      files:
        - file_name: orders.json
          must_exist: true
          json_checks:
            - { path: "$.orders", value_type: array, min_length: 1 }
            - { path: "$.orders[*].id", pattern: "^o-\\\\d+$" }
            - path: "$.count"
              consistency_check: { type: array_length, compare_with_path: "$.orders" }
      db_checks:
        - { file_name: cache.db, query: "SELECT 1", min_rows: 1 }
  - id: report
    description: Build the report
    context_dependencies: [fetch]
`;

function write(name: string, text: string): string {
  const p = join(tmp, name);
  writeFileSync(p, text);
  return p;
}

function expectError(fn: () => unknown, code: string, ...parts: string[]): RatchetError {
  try {
    fn();
  } catch (e) {
    expect(isRatchetError(e), String(e)).toBe(true);
    const err = e as RatchetError;
    expect(err.code, err.message).toBe(code);
    for (const p of parts) expect(err.message).toContain(p);
    return err;
  }
  return expect.unreachable("no error thrown");
}

const minimal = (extra: Record<string, unknown> = {}, step: Record<string, unknown> = {}) => ({
  id: "wf",
  steps: [{ id: "a", description: "A", ...step }],
  ...extra,
});

describe("loadWorkflow", () => {
  it("loads a full YAML workflow", () => {
    const path = write("flow.yaml", FULL);
    const wf = loadWorkflow(path);
    expect(wf.source).toBe(path);
    expect(wf.id).toBe("sales-report");
    expect(wf.variables).toEqual({
      REGION: { default: "eu", description: "Sales region" },
      LIMIT: { default: "5" },
      WEEK: {},
    });
    expect(wf.secrets).toEqual(["API_TOKEN", "DB_PASSWORD"]);
    expect(wf.defaults).toEqual({ use_code_execution_mode: true, declared_execution_mode: "code_exec" });
    expect(wf.groups).toEqual({ us: { REGION: "us", WEEK: "12" } });
    expect(wf.steps.map((s) => s.id)).toEqual(["fetch", "report"]);
    expect(wf.steps[0]?.context_dependencies).toEqual([]);
    expect(wf.steps[0]?.agent_configs.lock_code).toBe(true);
    expect(wf.steps[0]?.validation?.files?.[0]?.json_checks?.[1]?.pattern).toBe("^o-\\d+$");
    expect(wf.steps[1]?.context_dependencies).toEqual(["fetch"]);
    expect(wf.steps[1]?.agent_configs).toEqual({});
    expect(wf.steps[1]?.validation).toBeUndefined();
  });

  it("loads JSON by extension and by content", () => {
    const body = JSON.stringify(minimal({ variables: ["region", "var_limit"] }));
    expect(loadWorkflow(write("flow.json", body)).variables).toEqual({ REGION: {}, LIMIT: {} });
    expect(loadWorkflow(write("flow-noext", body)).id).toBe("wf");
  });

  it("accepts agent_configs at workflow level as an alias of defaults", () => {
    const wf = parseWorkflow(minimal({ agent_configs: { declared_execution_mode: "learn_code" } }), "f.yaml");
    expect(wf.defaults).toEqual({ declared_execution_mode: "learn_code" });
    expectError(
      () => parseWorkflow(minimal({ agent_configs: {}, defaults: {} }), "f.yaml"),
      "schema_violation",
      "f.yaml: agent_configs: is an alias of `defaults`",
    );
  });

  it("a missing file, a folder and an oversized path are unreadable_input", () => {
    expectError(() => loadWorkflow(join(tmp, "nope.yaml")), "unreadable_input", "nope.yaml", "no such file");
    mkdirSync(join(tmp, "dir.yaml"), { recursive: true });
    expectError(() => loadWorkflow(join(tmp, "dir.yaml")), "unreadable_input", "not a file");
  });

  it("YAML and JSON syntax errors are malformed_input naming the file", () => {
    expectError(
      () => loadWorkflow(write("bad.yaml", "id: [unclosed\n")),
      "malformed_input",
      "bad.yaml",
      "invalid YAML",
    );
    expectError(() => loadWorkflow(write("dup.yaml", "id: a\nid: b\n")), "malformed_input", "dup.yaml");
    expectError(
      () => loadWorkflow(write("bad.json", '{"id": }')),
      "malformed_input",
      "bad.json",
      "invalid JSON",
    );
  });

  it("schema errors name the file and the field path", () => {
    const text = FULL.replace("declared_execution_mode: learn_code", "declared_execution_mode: fast");
    const err = expectError(
      () => loadWorkflow(write("mode.yaml", text)),
      "schema_violation",
      "mode.yaml",
      "steps[0].agent_configs.declared_execution_mode: must be one of direct, code_exec, learn_code",
      '(got "fast")',
    );
    expect(err.details.field).toBe("steps[0].agent_configs.declared_execution_mode");
  });

  it("an empty file is a schema violation", () => {
    expectError(
      () => loadWorkflow(write("empty.yaml", "")),
      "schema_violation",
      "empty.yaml",
      "must be of type object",
    );
  });
});

describe("parseWorkflow structure", () => {
  it.each([
    [minimal({ extra: 1 }), "extra: unknown field"],
    [minimal({}, { agent_configs: { foo: true } }), "steps[0].agent_configs.foo: unknown field"],
    [
      minimal({}, { agent_configs: { learnings_access: "all" } }),
      "steps[0].agent_configs.learnings_access: must be one of read, read-write, none",
    ],
    [
      minimal({}, { agent_configs: { use_code_execution_mode: "yes" } }),
      "steps[0].agent_configs.use_code_execution_mode: must be of type boolean",
    ],
    [{ id: "wf", steps: [{ id: "a" }] }, "steps[0].description: is required"],
    [minimal({}, { description: "  " }), "steps[0].description: must not be empty"],
    [{ steps: [{ id: "a", description: "A" }] }, "id: is required"],
    [{ id: "wf", steps: [] }, "steps: must have at least 1 item"],
    [minimal({ id: "Bad Id" }), "id: workflow id"],
    [minimal({}, { id: "A_b" }), "steps[0].id: step id"],
    [
      minimal({}, { validation: { files: [{ file_name: "a.json", extra: 1 }] } }),
      "steps[0].validation.files[0].extra: unknown field",
    ],
    [
      minimal(
        {},
        {
          validation: {
            files: [{ file_name: "a.json", json_checks: [{ path: "$.a", value_type: "text" }] }],
          },
        },
      ),
      "steps[0].validation.files[0].json_checks[0].value_type: must be one of",
    ],
    [
      minimal(
        {},
        { validation: { files: [{ file_name: "a.json", json_checks: [{ path: "$.a", min_length: -1 }] }] } },
      ),
      "json_checks[0].min_length: must be at least 0",
    ],
    [
      minimal(
        {},
        {
          validation: {
            files: [
              { file_name: "a.json", json_checks: [{ path: "$.a", consistency_check: { type: "equals" } }] },
            ],
          },
        },
      ),
      "consistency_check.compare_with_path: is required",
    ],
    [minimal({ groups: { g: { X: { a: 1 } } } }), "groups.g.X: must be a string, number or boolean"],
    [minimal({ variables: "REGION" }), "variables: must be a list of names or a map"],
    [minimal({ variables: { REGION: { default: "x", extra: 1 } } }), "variables.REGION.extra: unknown field"],
  ])("%j → %s", (raw, message) => {
    expectError(() => parseWorkflow(raw, "w.yaml"), "schema_violation", "w.yaml", message);
  });

  it("limits files to 20 and json_checks to 100 per file", () => {
    const files = Array.from({ length: 21 }, (_, i) => ({ file_name: `f${i}.json` }));
    expectError(
      () => parseWorkflow(minimal({}, { validation: { files } }), "w.yaml"),
      "schema_violation",
      "steps[0].validation.files: has too many items (at most 20, got 21)",
    );
    const json_checks = Array.from({ length: 101 }, () => ({ path: "$.a" }));
    expectError(
      () =>
        parseWorkflow(
          minimal({}, { validation: { files: [{ file_name: "a.json", json_checks }] } }),
          "w.yaml",
        ),
      "schema_violation",
      "steps[0].validation.files[0].json_checks: has too many items (at most 100, got 101)",
    );
  });

  it("reports every problem at once", () => {
    const err = expectError(
      () => parseWorkflow({ id: "wf", steps: [{ id: "a", description: "A", oops: 1 }], nope: 2 }, "w.yaml"),
      "schema_violation",
      "2 problems",
    );
    expect((err.details.issues as unknown[]).length).toBe(2);
  });
});

describe("parseWorkflow cross-field rules", () => {
  const steps = (...list: [string, string[]][]) =>
    list.map(([id, deps]) => ({ id, description: id, context_dependencies: deps }));

  it("step ids are unique", () => {
    expectError(
      () => parseWorkflow({ id: "wf", steps: steps(["a", []], ["a", []]) }, "w.yaml"),
      "schema_violation",
      "steps[1].id: duplicate step id a (also steps[0])",
    );
  });

  it("dependencies must name earlier steps", () => {
    expectError(
      () => parseWorkflow({ id: "wf", steps: steps(["a", ["b"]], ["b", []]) }, "w.yaml"),
      "schema_violation",
      "steps[0].context_dependencies[0]: step a depends on b, which comes later (steps[1])",
    );
    expectError(
      () => parseWorkflow({ id: "wf", steps: steps(["a", []], ["b", ["zzz"]]) }, "w.yaml"),
      "schema_violation",
      "step b depends on unknown step zzz",
    );
    expectError(
      () => parseWorkflow({ id: "wf", steps: steps(["a", ["a"]]) }, "w.yaml"),
      "schema_violation",
      "step a depends on itself",
    );
    const ok = parseWorkflow(
      { id: "wf", steps: steps(["a", []], ["b", ["a"]], ["c", ["a", "b"]]) },
      "w.yaml",
    );
    expect(ok.steps[2]?.context_dependencies).toEqual(["a", "b"]);
  });

  it("variables and secrets are normalised and validated", () => {
    expect(normaliseVariableName("var_region")).toBe("REGION");
    expect(normaliseSecretName("secret_token")).toBe("TOKEN");
    expectError(
      () => parseWorkflow(minimal({ variables: ["1abc"] }), "w.yaml"),
      "schema_violation",
      "variables[0]: variable name",
    );
    expectError(
      () => parseWorkflow(minimal({ variables: ["region", "VAR_REGION"] }), "w.yaml"),
      "schema_violation",
      "variables[1]: variable REGION is declared twice (first at variables[0])",
    );
    expectError(
      () => parseWorkflow(minimal({ secrets: ["a-b"] }), "w.yaml"),
      "schema_violation",
      "secrets[0]: secret name",
    );
    const wf = parseWorkflow(minimal({ variables: { region: null } }), "w.yaml");
    expect(wf.variables).toEqual({ REGION: {} });
  });

  it("groups may only set declared variables", () => {
    expectError(
      () =>
        parseWorkflow(
          minimal({ variables: ["region"], groups: { eu: { REGION: "eu", TEAM: "x" } } }),
          "w.yaml",
        ),
      "schema_violation",
      "groups.eu.TEAM: variable TEAM is not declared",
    );
  });

  it("validation regexes compile, JSONPaths parse and file names stay inside", () => {
    const check = (c: Record<string, unknown>) =>
      minimal({}, { validation: { files: [{ file_name: "a.json", json_checks: [{ path: "$.a", ...c }] }] } });
    expectError(
      () => parseWorkflow(check({ pattern: "([a-z" }), "w.yaml"),
      "schema_violation",
      "steps[0].validation.files[0].json_checks[0].pattern: does not compile",
    );
    expectError(
      () => parseWorkflow(check({ path: "$..a" }), "w.yaml"),
      "schema_violation",
      "steps[0].validation.files[0].json_checks[0].path: invalid JSONPath",
    );
    expectError(
      () => parseWorkflow(check({ consistency_check: { type: "equals", compare_with_path: "b" } }), "w.yaml"),
      "schema_violation",
      "json_checks[0].consistency_check.compare_with_path: invalid JSONPath",
    );
    expectError(
      () => parseWorkflow(check({ min_value: 5, max_value: 1 }), "w.yaml"),
      "schema_violation",
      "json_checks[0].min_value: is greater than max_value",
    );
    expectError(
      () => parseWorkflow(minimal({}, { validation: { files: [{ file_name: "../x.json" }] } }), "w.yaml"),
      "schema_violation",
      "steps[0].validation.files[0].file_name",
      "must stay inside",
    );
    expectError(
      () => parseWorkflow(minimal({}, { validation: { files: [{ file_name: "/etc/passwd" }] } }), "w.yaml"),
      "schema_violation",
      "must be relative",
    );
    expectError(
      () =>
        parseWorkflow(
          minimal({}, { validation: { db_checks: [{ file_name: "a.db", query: "DELETE FROM t" }] } }),
          "w.yaml",
        ),
      "schema_violation",
      "steps[0].validation.db_checks[0].query: only a single SELECT or WITH query",
    );
  });

  it("stores the source as an absolute path", () => {
    expect(parseWorkflow(minimal(), "rel/flow.yaml").source).toBe(join(process.cwd(), "rel/flow.yaml"));
  });
});

describe("docs/steps.md", () => {
  it("the workflow example parses", () => {
    const doc = readFileSync(join(process.cwd(), "docs/steps.md"), "utf8");
    const section = doc.slice(doc.indexOf("## Workflow files"));
    const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    expect(yaml).toBeDefined();
    const wf = parseWorkflowText(yaml ?? "", join(tmp, "example.yaml"));
    expect(wf.steps.map((s) => s.id)).toEqual(["fetch-orders", "build-report"]);
    expect(wf.variables.LIMIT).toEqual({ default: "100" });
    expect(wf.steps[0]?.validation?.files?.[0]?.json_checks?.[1]?.pattern).toBe("^o-\\d+$");
  });
});
