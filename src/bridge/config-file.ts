/**
 * Reading the config file: `.ratchet/config.json` of the workspace, or a `--config` file. Only
 * `mcpServers` and `customTools` are the bridge's; other keys are left to their modules.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { ErrorCode, MAX_INPUT_BYTES, RatchetError } from "../core/index.js";
import { type BridgeConfig, bad, compileBridgeConfig, isObject } from "./config.js";

/**
 * The folder relative paths in a config file resolve against: the workspace folder (the one
 * holding `.ratchet/`) for `.ratchet/config.json`, else the config file's own folder.
 */
export function configBaseDir(configPath: string): string {
  const dir = dirname(resolve(configPath));
  return basename(dir) === ".ratchet" ? dirname(dir) : dir;
}

/**
 * Reads a config file and returns its bridge part (validated, with `baseDir` and `source` set).
 * A missing file is an error here; callers that treat "no config" as empty check first.
 *
 * @throws RatchetError `unreadable_input`, `malformed_input` or `schema_violation` (naming the field).
 */
export function loadBridgeConfig(path: string): BridgeConfig {
  let text: string;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new Error("not a regular file");
    if (st.size > MAX_INPUT_BYTES) throw new Error(`${st.size} bytes (limit ${MAX_INPUT_BYTES})`);
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new RatchetError(
      ErrorCode.UnreadableInput,
      `cannot read config ${path}: ${(err as Error).message}`,
      {
        file: path,
      },
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new RatchetError(ErrorCode.MalformedInput, `${path} is not valid JSON: ${(err as Error).message}`, {
      file: path,
    });
  }
  if (!isObject(value)) throw bad(path, "(config)", "must be a JSON object");
  const config: BridgeConfig = {
    baseDir: configBaseDir(path),
    source: path,
    ...(value["mcpServers"] !== undefined
      ? { mcpServers: value["mcpServers"] as BridgeConfig["mcpServers"] }
      : {}),
    ...(value["customTools"] !== undefined
      ? { customTools: value["customTools"] as BridgeConfig["customTools"] }
      : {}),
  };
  compileBridgeConfig(config); // report errors at load time, naming the file
  return config;
}

/**
 * The workspace's bridge config: `<workspaceDir>/config.json` (the `.ratchet/` folder), or an empty
 * config (no servers, no custom tools) when the file does not exist.
 */
export function loadWorkspaceBridgeConfig(workspaceDir: string): BridgeConfig {
  const path = resolve(workspaceDir, "config.json");
  if (!existsSync(path)) return { baseDir: dirname(resolve(workspaceDir)), source: path };
  return loadBridgeConfig(path);
}
