/** Shared set-up of the Builder's tests: a workspace, a workflow, a scripted model. */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { onTestFinished } from "vitest";
import { makeLedgerFixture } from "../../src/testing/ledger-fixtures.js";
import { type ScriptedModel, startScriptedModel } from "../../src/testing/scripted-model.js";
import { scriptedModelClient } from "../../src/testing/scripted-model-client.js";
import type { ScriptInput } from "../../src/testing/scripted-model-script.js";
import { loadWorkflow, type Workflow } from "../../src/workflow/index.js";

/** A script that writes report.json from VAR_REGION (passes review, run and validation). */
export const GOOD = [
  "import json",
  "import os",
  "",
  'out = os.environ["STEP_OUTPUT_DIR"]',
  'with open(os.path.join(out, "report.json"), "w") as f:',
  '    json.dump({"region": os.environ["VAR_REGION"]}, f)',
  'print("report written")',
  "",
].join("\n");

/** A script that fails at run time. */
export const BROKEN = [
  "import sys",
  'print("cannot reach the data", file=sys.stderr)',
  "sys.exit(3)",
  "",
].join("\n");

export const STEP_YAML = [
  "  - id: report",
  "    description: write report.json with the region",
  "    validation:",
  "      files:",
  "        - file_name: report.json",
  "          must_exist: true",
  "          json_checks: [{ path: $.region, value_type: string, min_length: 2 }]",
];

export function workflowYaml(extraStepLines: string[] = [], stepLines = STEP_YAML): string {
  return [
    "id: flow",
    "variables: { region: { default: eu } }",
    "defaults: { declared_execution_mode: learn_code }",
    "steps:",
    ...stepLines,
    ...extraStepLines,
    "",
  ].join("\n");
}

export interface BuilderFixture {
  home: string;
  ctx: {
    store: ReturnType<typeof makeLedgerFixture>["store"];
    ledger: ReturnType<typeof makeLedgerFixture>["ledger"];
    workspace: { root: string; dir: string; dbPath: string; blobsDir: string };
  };
  env: NodeJS.ProcessEnv;
  wf: () => Workflow;
  writeWorkflow: (yaml: string) => void;
  save: (stepId: string, script: string) => void;
}

export function builderFixture(yaml = workflowYaml()): BuilderFixture {
  const fx = makeLedgerFixture();
  onTestFinished(() => fx.dispose());
  const home = join(fx.dir, "wf");
  mkdirSync(home, { recursive: true });
  const file = join(home, "workflow.yaml");
  writeFileSync(file, yaml);
  mkdirSync(join(fx.dir, ".ratchet"), { recursive: true });
  return {
    home,
    ctx: {
      store: fx.store,
      ledger: fx.ledger,
      workspace: { root: fx.dir, dir: join(fx.dir, ".ratchet"), dbPath: "", blobsDir: "" },
    },
    env: { PATH: process.env.PATH, HOME: fx.dir, RATCHET_SANDBOX: "off" },
    wf: () => loadWorkflow(file),
    writeWorkflow: (y) => writeFileSync(file, y),
    save: (stepId, script) => {
      mkdirSync(join(home, "learnings", stepId), { recursive: true });
      writeFileSync(join(home, "learnings", stepId, "main.py"), script);
    },
  };
}

export async function scripted(script: ScriptInput | { tripwire: true }): Promise<ScriptedModel> {
  const model =
    "tripwire" in script
      ? await startScriptedModel({ tripwire: true })
      : await startScriptedModel({ script });
  onTestFinished(() => model.close());
  return model;
}

export const clientOf = (model: ScriptedModel) => () => scriptedModelClient(model);

/** A reply that writes main.py and then finishes, in one turn. */
export function writesScript(content: string, match?: Record<string, string>) {
  return {
    ...(match ? { match } : {}),
    tool_calls: [
      { name: "write_file", arguments: { path: "main.py", content } },
      { name: "finish", arguments: { summary: "wrote main.py" } },
    ],
    usage: { prompt_tokens: 100, completion_tokens: 50 },
  };
}

/** The last user message of a recorded request. */
export function userText(body: unknown): string {
  const messages = (body as { messages?: { role: string; content: unknown }[] }).messages ?? [];
  return messages
    .filter((m) => m.role === "user")
    .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)))
    .join("\n");
}

/** The system prompt of a recorded request. */
export function systemText(body: unknown): string {
  const messages = (body as { messages?: { role: string; content: unknown }[] }).messages ?? [];
  return messages
    .filter((m) => m.role === "system")
    .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)))
    .join("\n");
}

export function toolNames(body: unknown): string[] {
  const tools = (body as { tools?: { function?: { name?: string } }[] }).tools ?? [];
  return tools.map((t) => t.function?.name ?? "");
}
