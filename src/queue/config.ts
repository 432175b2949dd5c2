/**
 * Whether a workspace has a queue, and its lease: the `queue` section of `.ratchet/config.json`
 *
 * ```json
 * { "store": { "url": "postgres://…" }, "queue": { "enabled": true, "lease_seconds": 60 } }
 * ```
 *
 * or `RATCHET_QUEUE=1` (`0` turns a configured queue off for one command; environment over file).
 * A queue needs the PostgreSQL store: graphile-worker's tables live in the same database.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode, parseJsonStrict, RatchetError } from "../core/index.js";
import { DEFAULT_LEASE_SECONDS, MAX_LEASE_SECONDS, MIN_LEASE_SECONDS } from "./limits.js";

export interface QueueConfig {
  /** A queue is configured (config `queue.enabled` or `RATCHET_QUEUE=1`). */
  enabled: boolean;
  /** Lease of a claimed run in ms. */
  leaseMs: number;
  /** Where the setting came from (named in refusals). */
  source: "env" | "config" | "default";
}

const FIELDS = ["enabled", "lease_seconds"];

/** Compiles the `queue` section. @throws RatchetError `schema_violation` naming the field. */
export function compileQueueConfig(section: unknown, file = "config"): Omit<QueueConfig, "source"> {
  const bad = (field: string, message: string): never => {
    throw new RatchetError(ErrorCode.SchemaViolation, `${file}: ${field}: ${message}`, { field, file });
  };
  if (section === undefined) return { enabled: false, leaseMs: DEFAULT_LEASE_SECONDS * 1000 };
  if (section === null || typeof section !== "object" || Array.isArray(section))
    return bad("queue", "must be an object");
  const o = section as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!FIELDS.includes(k)) bad(`queue.${k}`, `unknown field (allowed: ${FIELDS.join(", ")})`);
  if (o.enabled !== undefined && typeof o.enabled !== "boolean")
    bad("queue.enabled", "must be true or false");
  const lease = o.lease_seconds ?? DEFAULT_LEASE_SECONDS;
  if (
    typeof lease !== "number" ||
    !Number.isInteger(lease) ||
    lease < MIN_LEASE_SECONDS ||
    lease > MAX_LEASE_SECONDS
  )
    bad(
      "queue.lease_seconds",
      `must be a whole number of seconds from ${MIN_LEASE_SECONDS} to ${MAX_LEASE_SECONDS}`,
    );
  return { enabled: o.enabled === true, leaseMs: (lease as number) * 1000 };
}

/**
 * The queue settings of a workspace folder (`.ratchet/`) and the environment.
 * @throws RatchetError `schema_violation` naming `queue.*` or `RATCHET_QUEUE`.
 */
export function loadQueueConfig(workspaceDir: string, env: NodeJS.ProcessEnv = process.env): QueueConfig {
  const path = join(workspaceDir, "config.json");
  let section: unknown;
  try {
    const json = parseJsonStrict(readFileSync(path, "utf8"), path, { file: path });
    section =
      json && typeof json === "object" && !Array.isArray(json)
        ? (json as { queue?: unknown }).queue
        : undefined;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  const compiled = compileQueueConfig(section, path);
  const flag = env.RATCHET_QUEUE;
  if (flag === undefined || flag === "")
    return { ...compiled, source: section === undefined ? "default" : "config" };
  if (flag !== "0" && flag !== "1")
    throw new RatchetError(
      ErrorCode.SchemaViolation,
      `RATCHET_QUEUE must be 1 or 0 (got ${JSON.stringify(flag)})`,
      {
        field: "RATCHET_QUEUE",
      },
    );
  return { ...compiled, enabled: flag === "1", source: "env" };
}

/**
 * Refuses a queue operation on a workspace without one.
 * @throws RatchetError `invalid_value` (exit 2) naming `store` (not PostgreSQL) or `queue` (not enabled).
 */
export function requireQueue(ws: { storeUrl?: string; dir: string }, cfg: QueueConfig, what: string): void {
  if (!ws.storeUrl)
    throw new RatchetError(
      ErrorCode.InvalidValue,
      `${what} needs the PostgreSQL store (the queue lives in its database): set store.url in .ratchet/config.json or RATCHET_DB=postgres://…; see docs/scale-out.md`,
      { field: "store" },
    );
  if (!cfg.enabled)
    throw new RatchetError(
      ErrorCode.InvalidValue,
      `${what} needs a queue: set "queue": {"enabled": true} in ${join(ws.dir, "config.json")} or RATCHET_QUEUE=1; see docs/scale-out.md`,
      { field: "queue" },
    );
}
