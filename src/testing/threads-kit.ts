/**
 * Test wiring for threads (used by the threads tests and the benchmark): a temp store, a
 * scripted model, a tool registry with the real MCP fixture server and the append tool.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createToolRegistry } from "../bridge/index.js";
import { SqliteStore } from "../store/index.js";
import {
  bridgeActions,
  compileThreadsConfig,
  ThreadService,
  type ThreadServiceOptions,
  type ThreadsConfig,
} from "../threads/index.js";
import { type ScriptedModel, startScriptedModel } from "./scripted-model.js";
import { scriptedModelClient } from "./scripted-model-client.js";
import type { ScriptInput } from "./scripted-model-script.js";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const ECHO_SERVER = join(ROOT, "test", "fixtures", "mcp", "echo-server.mjs");
export const APPEND_TOOL = join(ROOT, "test", "fixtures", "threads", "append-tool.mjs");

export interface Kit {
  svc: ThreadService;
  model: ScriptedModel;
  store: SqliteStore;
  dir: string;
  appendFile: string;
  close(): Promise<void>;
}

/** The kit's tools: the MCP echo server and `append` (one line per call into `appendFile`). */
export function kitActions(appendFile: string, effects: ThreadsConfig["effects"]) {
  return bridgeActions(
    createToolRegistry({
      baseDir: ROOT,
      mcpServers: { echo: { command: process.execPath, args: [ECHO_SERVER] } },
      customTools: {
        append: {
          command: process.execPath,
          args: [APPEND_TOOL, appendFile],
          description: "Appends a line to the log.",
          input_schema: { type: "object", properties: { line: { type: "string" } }, required: ["line"] },
        },
      },
    }),
    effects,
  );
}

export async function makeKit(
  script: ScriptInput,
  opts: { threads?: unknown; service?: Partial<ThreadServiceOptions>; dir?: string } = {},
): Promise<Kit> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "ratchet-threads-"));
  const owned = opts.dir === undefined;
  const store = SqliteStore.open(join(dir, "ratchet.db"), { create: true });
  const model = await startScriptedModel({ script });
  const appendFile = join(dir, "appended.txt");
  const config = compileThreadsConfig(opts.threads);
  const svc = new ThreadService({
    store,
    config,
    model: () => scriptedModelClient(model),
    actions: () => kitActions(appendFile, config.effects),
    ...opts.service,
  });
  return {
    svc,
    model,
    store,
    dir,
    appendFile,
    async close() {
      await model.close();
      store.close();
      // A folder the kit made is the kit's to remove (thousands were left in the temp folder).
      if (owned) rmSync(dir, { recursive: true, force: true });
    },
  };
}
