/**
 * The user's words and their sources on the command line: `ratchet note "<words>" --at …`,
 * `ratchet reference pending`, and `ratchet hook user-prompt | install`. `note add`,
 * `reference add` and `reference mark` are generated from FLOWS (main.ts) into the groups made here;
 * `note "<words>"` builds the same flow's input from the spec's flags.
 */
import { realpathSync } from "node:fs";
import type { Command } from "commander";
import { ErrorCode, RatchetError, toRatchetError } from "../core/index.js";
import { parseRefFlag } from "../provenance/words/inputs.js";
import { planHookInstall, writeSettingsAtomic } from "../provenance/words/install.js";
import { SqlWordStore } from "../provenance/words/store.js";
import { type GlobalOptions, withLedgerContext } from "./context.js";
import { INPUT_FILE } from "./flow-args.js";
// Statically: a dynamic import would split the modules it shares with the write path into extra
// chunks that every ledger write then loads (scripts/bundle.mjs). The hook's own fast path is
// bin/ratchet.js → dist/bundle/hook.cjs.
import { hookMainArgs } from "./hook-commands.js";
import { out } from "./io.js";
import { reportError, runWriteFlow } from "./write-flows.js";

type Act = <A extends unknown[]>(fn: (...a: A) => Promise<number>) => (...a: A) => Promise<void>;

const NOTE_FLAGS: Record<string, string> = {
  at: "at",
  project: "project",
  plan: "plan_id",
  "plan-id": "plan_id",
  node: "node",
  kind: "kind",
};

/** `note` arguments → the note flow's input (`{source}` for a JSON/YAML file or `-`). */
export function noteInput(args: readonly string[]): { source: string } | { raw: Record<string, unknown> } {
  if (args.length === 1 && INPUT_FILE.test(args[0] as string)) return { source: args[0] as string };
  const words: string[] = [];
  const raw: Record<string, unknown> = {};
  const refs: Record<string, string>[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === "--") {
      words.push(...args.slice(i + 1));
      break;
    }
    if (!a.startsWith("--")) {
      words.push(a);
      continue;
    }
    const eq = a.indexOf("=");
    const flag = eq > 0 ? a.slice(2, eq) : a.slice(2);
    if (flag === "json") {
      raw.json = true;
      continue;
    }
    const field = flag === "ref" ? "refs" : NOTE_FLAGS[flag];
    if (!field)
      throw new RatchetError(
        ErrorCode.Usage,
        `unknown flag --${flag} for \`ratchet note\`; flags: --at, --project, --plan, --node, --kind, --ref, --json`,
        { field: flag },
      );
    const value = eq > 0 ? a.slice(eq + 1) : args[i + 1];
    if (eq < 0) i++;
    if (value === undefined) throw new RatchetError(ErrorCode.Usage, `--${flag} needs a value`, { field });
    if (flag === "ref") {
      refs.push(parseRefFlag(value, refs.length));
      continue;
    }
    raw[field] = value;
  }
  if (words.length) raw.text = words.join(" ");
  if (refs.length) raw.refs = refs;
  return { raw };
}

/** `ratchet reference pending`: linked references never checked or not checked for N days. */
async function referencePending(
  opts: GlobalOptions & { olderThanDays?: string; json?: boolean },
): Promise<number> {
  const days = opts.olderThanDays === undefined ? 30 : Number(opts.olderThanDays);
  if (!Number.isInteger(days) || days < 0)
    throw new RatchetError(
      ErrorCode.Usage,
      `--older-than-days: expected a whole number of days ≥ 0 (got ${JSON.stringify(opts.olderThanDays)})`,
      { field: "older_than_days" },
    );
  return withLedgerContext(opts, (ctx) => {
    const cutoff = new Date(Date.now() - days * 86_400_000).toISOString();
    const rows = new SqlWordStore(ctx.store).pendingReferences(cutoff);
    const items = rows.map((r) => ({
      reference_id: r.id,
      project: r.project,
      kind: r.kind,
      label: r.label,
      uri: r.uri,
      occurred_at: r.occurred_at,
      last_checked: r.last_checked,
      mark: `ratchet reference mark ${r.id} --ok|--gone|--moved|--no-access [--note "…"]`,
    }));
    if (opts.json) out(JSON.stringify({ older_than_days: days, cutoff, references: items }, null, 2));
    else {
      out(
        `pending references (linked, never checked or last checked over ${days} days ago) · ${items.length}`,
      );
      for (const r of items) {
        out(
          ` #${r.reference_id} · ${r.kind} · ${r.label} · ${r.uri} · ${r.last_checked ? `checked ${r.last_checked}` : "never checked"}`,
        );
        out(`    ${r.mark}`);
      }
    }
    return 0;
  });
}

/** Adds `note`, `reference`, `hook`; returns the groups the FLOWS loop adds generated verbs to. */
export function addWordsCommands(
  program: Command,
  act: Act,
  globals: () => GlobalOptions,
): Record<string, Command> {
  const note = program
    .command("note")
    .description("record words said elsewhere, with their sources (see --help)")
    .argument("[words...]", "the words, quoted")
    .allowUnknownOption()
    .allowExcessArguments()
    .helpOption("-h, --help", "show the flags")
    .addHelpText(
      "after",
      [
        "",
        'Usage: ratchet note "<words>" --at <when> [--project P] [--plan ID] [--node QN|nk_…|file:line]',
        "         [--kind technical|organizational|mixed] [--ref kind=K,label=L[,uri=U]]… [--json]",
        "       ratchet note add <input.json|->   (the write flow `note`: fields text, at, project, plan_id, node, kind, refs)",
        "",
        "  --at    YYYY-MM-DD[ HH:MM[:SS]] (T allowed; UTC unless it ends in Z or ±HH:MM)",
        "  --ref   one source per flag; kind: email, meeting, chat, ticket, doc, commit, verbal, other",
        "  --node  also record a stated reason spanning the whole note (needs a project)",
        "",
        "Origin: human_cli when stdin is a terminal, else agent_cli. Output: JSON and the marker line.",
      ].join("\n"),
    )
    .action(
      act(async (_words: string[], _o: unknown, cmd: Command) => {
        let parsed: ReturnType<typeof noteInput>;
        try {
          parsed = noteInput(cmd.args);
        } catch (e) {
          return reportError("note", toRatchetError(e));
        }
        if ("source" in parsed) return runWriteFlow("note", parsed.source, globals());
        return runWriteFlow("note", undefined, globals(), { raw: parsed.raw });
      }),
    );

  const reference = program
    .command("reference")
    .description("sources behind reasons and words: add, pending, mark");
  reference
    .command("pending")
    .description(
      "linked references never checked, or last checked more than N days ago, each with its mark command",
    )
    .option("--older-than-days <n>", "days since the last check (default 30)")
    .option("--json", "machine-readable output")
    .action(
      act(async (o: { olderThanDays?: string; json?: boolean }) => referencePending({ ...globals(), ...o })),
    );

  const hook = program.command("hook").description("agent hooks: record the user's prompts");
  hook
    .command("user-prompt")
    .description(
      "the UserPromptSubmit hook: reads the hook JSON on stdin, records the prompt; always exit 0, prints nothing but a source hint",
    )
    .allowUnknownOption()
    .allowExcessArguments()
    .action(
      act(async (_o: unknown, cmd: Command) => {
        const db = globals().db;
        return hookMainArgs([...cmd.args, ...(db ? ["--db", db] : [])]);
      }),
    );
  hook
    .command("install")
    .description(
      "write the UserPromptSubmit hook into <project>/.claude/settings.json (shows the change first)",
    )
    .option("--project-dir <dir>", "the project (default: the current folder's git root, else the folder)")
    .option("--yes", "write without asking")
    .option("--print", "print the change and write nothing")
    .action(
      act(async (o: { projectDir?: string; yes?: boolean; print?: boolean }) => {
        return hookInstall({ ...globals(), ...o });
      }),
    );
  return { note, reference };
}

/** `ratchet hook install`: shows the change to `.claude/settings.json`, asks, writes atomically. */
async function hookInstall(
  o: GlobalOptions & { projectDir?: string; yes?: boolean; print?: boolean },
): Promise<number> {
  let bin = process.argv[1] ?? "ratchet";
  try {
    bin = realpathSync(bin);
  } catch {
    // not a file (an embedding caller): the name as given
  }
  const plan = planHookInstall({
    cwd: process.cwd(),
    ...(o.projectDir !== undefined ? { projectDir: o.projectDir } : {}),
    ...(o.db !== undefined ? { db: o.db } : {}),
    node: process.execPath,
    bin,
  });
  const result = {
    ok: true,
    op: "hook-install",
    settings: plan.settingsPath,
    command: plan.command,
    changed: plan.changed,
  };
  if (!plan.changed) {
    out(JSON.stringify({ ...result, notice: "the hook is already installed: nothing to change" }));
    return 0;
  }
  out(plan.diff);
  if (plan.notice) process.stderr.write(`ratchet: hook install: notice: ${plan.notice}\n`);
  if (o.print) {
    out(JSON.stringify({ ...result, written: false }));
    return 0;
  }
  if (!o.yes) {
    if (!process.stdin.isTTY) {
      process.stderr.write(
        "❌ ratchet: hook install: not a terminal, so nobody can confirm: nothing written; run again with --yes to write the change above (or --print to only show it)\n",
      );
      return 2;
    }
    const { createInterface } = await import("node:readline/promises");
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    const answer = (await rl.question(`Write this change to ${plan.settingsPath}? [y/N] `))
      .trim()
      .toLowerCase();
    rl.close();
    if (answer !== "y" && answer !== "yes") {
      out(JSON.stringify({ ...result, written: false, notice: "not confirmed: nothing written" }));
      return 0;
    }
  }
  writeSettingsAtomic(plan.settingsPath, plan.after);
  out(JSON.stringify({ ...result, written: true }));
  return 0;
}
