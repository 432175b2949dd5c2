/**
 * `ratchet hook install`: the UserPromptSubmit hook merged into `<project>/.claude/settings.json`
 * (other keys and hooks kept; a second install changes nothing; an older Ratchet prompt hook is
 * updated in place), the exact change as a line diff, and an atomic write.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { ErrorCode, RatchetError } from "../../core/index.js";
import { gitRoot } from "../../ledger/core.js";
import { isPostgresUrl } from "../../store/postgres/url.js";
import { envDb, findWorkspace } from "../../store/workspace.js";

/** How a Ratchet prompt hook is recognised in a settings file (to update it, never to duplicate it). */
const OURS = / hook user-prompt(\s|$)/;

function q(s: string): string {
  return /^[A-Za-z0-9_./:@%+=-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The command the hook runs: absolute node and bin/ratchet.js, so it works from any folder. */
export function hookCommand(node: string, bin: string, db?: string): string {
  return `${q(node)} ${q(bin)} hook user-prompt${db ? ` --db ${q(db)}` : ""}`;
}

interface HookEntry {
  type?: string;
  command?: string;
  [k: string]: unknown;
}
interface HookGroup {
  matcher?: string;
  hooks?: HookEntry[];
  [k: string]: unknown;
}

/** `settings` with the prompt hook merged in (a new object; `settings` is not changed). */
export function mergePromptHook(settings: Record<string, unknown>, command: string): Record<string, unknown> {
  const next = structuredClone(settings);
  const hooks = (next.hooks ?? {}) as Record<string, unknown>;
  if (typeof hooks !== "object" || hooks === null || Array.isArray(hooks))
    throw new RatchetError(
      ErrorCode.InvalidValue,
      "field `hooks` of settings.json is not an object: fix it first; nothing written",
      {
        field: "hooks",
      },
    );
  const groups = (hooks.UserPromptSubmit ?? []) as HookGroup[];
  if (!Array.isArray(groups))
    throw new RatchetError(
      ErrorCode.InvalidValue,
      "field `hooks.UserPromptSubmit` of settings.json is not a list: fix it first; nothing written",
      { field: "hooks.UserPromptSubmit" },
    );
  let found = false;
  for (const g of groups)
    for (const h of Array.isArray(g?.hooks) ? g.hooks : [])
      if (h && typeof h.command === "string" && OURS.test(h.command) && /ratchet/.test(h.command)) {
        if (!found) h.command = command;
        found = true;
      }
  if (!found) groups.push({ hooks: [{ type: "command", command, timeout: 10 }] });
  hooks.UserPromptSubmit = groups;
  next.hooks = hooks;
  return next;
}

/** A line diff (`-` removed, `+` added, two lines of context), enough to show a settings change. */
export function lineDiff(path: string, before: string, after: string): string {
  const a = before === "" ? [] : before.replace(/\n$/, "").split("\n");
  const b = after.replace(/\n$/, "").split("\n");
  // Longest common subsequence over lines (settings files are small).
  const n = a.length;
  const m = b.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      (lcs[i] as number[])[j] =
        a[i] === b[j]
          ? ((lcs[i + 1] as number[])[j + 1] as number) + 1
          : Math.max((lcs[i + 1] as number[])[j] as number, (lcs[i] as number[])[j + 1] as number);
  const ops: string[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) {
      ops.push(`  ${a[i]}`);
      i++;
      j++;
    } else if (
      j < m &&
      (i >= n || ((lcs[i] as number[])[j + 1] as number) > ((lcs[i + 1] as number[])[j] as number))
    ) {
      ops.push(`+ ${b[j]}`);
      j++;
    } else {
      ops.push(`- ${a[i]}`);
      i++;
    }
  }
  const keep = ops.map((_o, k) => ops.slice(Math.max(0, k - 2), k + 3).some((x) => !x.startsWith("  ")));
  const lines: string[] = [`--- ${path}${before === "" ? " (new file)" : ""}`, `+++ ${path}`];
  let skipped = false;
  ops.forEach((o, k) => {
    if (keep[k]) {
      lines.push(o);
      skipped = false;
    } else if (!skipped) {
      lines.push("  …");
      skipped = true;
    }
  });
  return lines.join("\n");
}

export interface InstallPlan {
  settingsPath: string;
  command: string;
  changed: boolean;
  before: string;
  after: string;
  diff: string;
  notice?: string;
}

/** What `hook install` would write. @throws invalid_value for a missing folder or a settings file that is not a JSON object. */
export function planHookInstall(opts: {
  cwd: string;
  projectDir?: string;
  db?: string;
  node: string;
  bin: string;
}): InstallPlan {
  const dir =
    opts.projectDir !== undefined
      ? resolve(opts.cwd, opts.projectDir)
      : (gitRoot(opts.cwd) ?? resolve(opts.cwd));
  if (!existsSync(dir) || !statSync(dir).isDirectory())
    throw new RatchetError(
      ErrorCode.InvalidValue,
      `--project-dir ${opts.projectDir}: no such folder; nothing written`,
      {
        field: "project_dir",
      },
    );
  const named = opts.db ?? envDb();
  const found = named ? undefined : (findWorkspace(dir) ?? findWorkspace(opts.cwd));
  // A PostgreSQL URL may hold a password: never written into the settings file. The hook finds the
  // database itself (RATCHET_DB in the agent's environment, or the workspace's store.url).
  const postgres = isPostgresUrl(named) || found?.storeUrl !== undefined;
  const db = postgres ? undefined : named ? resolve(opts.cwd, named) : found?.dbPath;
  const command = hookCommand(opts.node, opts.bin, db);
  const settingsPath = join(dir, ".claude", "settings.json");
  const before = existsSync(settingsPath) ? readFileSync(settingsPath, "utf8") : "";
  let settings: Record<string, unknown> = {};
  if (before.trim() !== "") {
    let parsed: unknown;
    try {
      parsed = JSON.parse(before);
    } catch (e) {
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `${settingsPath} is not valid JSON (${(e as Error).message}): fix it first; nothing written`,
        { field: "settings" },
      );
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
      throw new RatchetError(
        ErrorCode.InvalidValue,
        `${settingsPath} is not a JSON object: nothing written`,
        { field: "settings" },
      );
    settings = parsed as Record<string, unknown>;
  }
  const merged = mergePromptHook(settings, command);
  const changed = JSON.stringify(merged) !== JSON.stringify(settings);
  // Keep the file's own indentation (a compact file is written with two spaces).
  const indent = /\n([ \t]+)"/.exec(before)?.[1] ?? 2;
  const after = changed ? `${JSON.stringify(merged, null, indent)}\n` : before;
  return {
    settingsPath,
    command,
    changed,
    before,
    after,
    diff: changed ? lineDiff(settingsPath, before, after) : "",
    ...(postgres
      ? {
          notice:
            "the store is PostgreSQL: the hook command names no database (a URL may hold a password); the hook finds it through RATCHET_DB in the agent's environment or store.url in the workspace's .ratchet/config.json",
        }
      : db
        ? {}
        : {
            notice:
              "no Ratchet workspace found: the hook will look for one from the prompt's folder (run `ratchet init` there, or install with --db)",
          }),
  };
}

/** Writes `text` to `path` through a temporary file and a rename (never a half-written settings file). */
export function writeSettingsAtomic(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}
