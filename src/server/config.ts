/**
 * The `server` section of the workspace config file (`.ratchet/config.json`):
 *
 * ```json
 * { "server": { "allowed_hosts": ["ratchet.internal", "box.lan:8765"] } }
 * ```
 *
 * `allowed_hosts` are the names `ratchet serve` answers besides the loopback names (and the address
 * it binds): `name` on any port, `name:port` on that port only. Other sections belong to other
 * modules; an absent file or section means no extra hosts.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode, parseJsonStrict, RatchetError, splitHostPort } from "../core/index.js";

export interface ServerConfig {
  allowedHosts: string[];
}

const FIELDS = ["allowed_hosts"];

/** Compiles the `server` section. @throws RatchetError `schema_violation` naming the field. */
export function compileServerConfig(section: unknown, source = "config"): ServerConfig {
  if (section === undefined) return { allowedHosts: [] };
  const bad = (field: string, message: string): never => {
    throw new RatchetError(ErrorCode.SchemaViolation, `${source}: ${field}: ${message}`, { field });
  };
  if (section === null || typeof section !== "object" || Array.isArray(section))
    bad("server", "must be an object");
  const o = section as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!FIELDS.includes(k)) bad(`server.${k}`, `unknown field (allowed: ${FIELDS.join(", ")})`);
  const hosts = o.allowed_hosts ?? [];
  if (!Array.isArray(hosts)) bad("server.allowed_hosts", "must be an array of host names");
  const allowedHosts = (hosts as unknown[]).map((h, i) => {
    if (typeof h !== "string" || !splitHostPort(h))
      bad(
        `server.allowed_hosts[${i}]`,
        `must be a host name, an IP address ([…] for IPv6), optionally with :port (got ${JSON.stringify(h)})`,
      );
    return (h as string).trim().toLowerCase();
  });
  return { allowedHosts };
}

/** Reads the `server` section of `<workspaceDir>/config.json` (absent file: defaults). */
export function loadServerConfig(workspaceDir: string): ServerConfig {
  const path = join(workspaceDir, "config.json");
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return compileServerConfig(undefined);
  }
  const json = parseJsonStrict(text, path, { file: path });
  if (json === null || typeof json !== "object" || Array.isArray(json))
    throw new RatchetError(ErrorCode.SchemaViolation, `${path}: must be a JSON object`, { file: path });
  return compileServerConfig((json as { server?: unknown }).server, path);
}
