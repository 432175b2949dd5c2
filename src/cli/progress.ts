/**
 * The progress of the long commands on a terminal, one shared vocabulary: `ratchet run`
 * (run-progress.ts), `runner run` (a task's rounds, tool calls and DoD runs), `build` (its agents'
 * rounds and tool calls, each attempt's check) and `thread watch` (thread-render.ts). Colour on a
 * terminal unless `NO_COLOR` is set or `TERM=dumb`; `--json` and `--quiet` print no progress.
 *
 * `RATCHET_PROGRESS=tty` forces terminal mode on a pipe (CI logs); `RATCHET_PROGRESS=plain`
 * forces the piped form on a terminal.
 */
import type { AttemptReport } from "../builder/index.js";
import type { ToolLoopEvent } from "../model/index.js";
import type { TaskEvent } from "../runner/index.js";

export interface ProgressMode {
  /** Progress lines as the work happens. */
  live: boolean;
  colour: boolean;
}

/** Terminal mode from the stream and the environment (pure). */
export function progressMode(isTty: boolean, env: NodeJS.ProcessEnv): ProgressMode {
  const forced = env.RATCHET_PROGRESS;
  const live = forced === "tty" ? true : forced === "plain" ? false : isTty;
  const noColour = env.NO_COLOR !== undefined && env.NO_COLOR !== "";
  return { live, colour: live && !noColour && env.TERM !== "dumb" };
}

/** The mode of a command run with `--json`/`--quiet` on stdout, or undefined when it shows no progress. */
export function liveMode(
  o: { json?: boolean | undefined; quiet?: boolean | undefined },
  isTty: boolean = process.stdout.isTTY === true,
  env: NodeJS.ProcessEnv = process.env,
): ProgressMode | undefined {
  if (o.json || o.quiet) return undefined;
  const mode = progressMode(isTty, env);
  return mode.live ? mode : undefined;
}

const CODES = { dim: "2", bold: "1", green: "32", red: "31", yellow: "33", cyan: "36" } as const;
export type Colour = keyof typeof CODES;
export type Paint = (code: Colour, s: string) => string;

export function painter(colour: boolean): Paint {
  return (code, s) => (colour ? `\x1b[${CODES[code]}m${s}\x1b[0m` : s);
}

/** One line of at most `max` characters (JSON for non-strings). */
export function short(v: unknown, max = 120): string {
  const s = (typeof v === "string" ? v : (JSON.stringify(v) ?? "")).replace(/\s+/g, " ").trim();
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

const pass = (paint: Paint, ok: boolean) => (ok ? paint("green", "✓") : paint("red", "✗"));

/** `runner run`: a task's events (already masked by the runner) as they happen. */
export function taskProgressPrinter(
  mode: ProgressMode,
  write: (line: string) => void,
): (e: TaskEvent) => void {
  const paint = painter(mode.colour);
  return (e) => {
    switch (e.type) {
      case "task_started":
        write(
          `${paint("cyan", "▶")} task ${paint("bold", e.task_id)} started${e.title ? `: ${short(e.title)}` : ""}`,
        );
        return;
      case "round_started":
        write(`${paint("cyan", "●")} round ${e.round}`);
        return;
      case "model_reply": {
        const calls = (e.tool_calls as { name: string; args: unknown }[] | undefined) ?? [];
        if (typeof e.text === "string" && e.text.trim()) write(`  ${paint("dim", short(e.text))}`);
        for (const c of calls) write(`  ${paint("dim", "→")} ${c.name} ${paint("dim", short(c.args, 100))}`);
        return;
      }
      case "tool_result":
        write(
          `  ${e.is_error ? paint("red", "✗") : paint("dim", "←")} ${e.name}${e.is_error ? `: ${short(e.content, 100)}` : ""}`,
        );
        return;
      case "tool_refused":
        write(`  ${paint("yellow", "⊘")} ${e.tool} refused: ${short(e.reason)}`);
        return;
      case "model_error":
        write(`  ${paint("red", "✗")} model error: ${short(e.message)}`);
        return;
      case "protected_restored":
        write(`  ${paint("yellow", "↺")} protected paths restored: ${short(e.paths)}`);
        return;
      case "dod_run":
        write(
          `  ${pass(paint, e.passed === true)} DoD (${e.label}): ${e.passed ? "passed" : "failed"}, exit ${e.exit_code}${e.timed_out ? ", timed out" : ""}`,
        );
        return;
      case "round_regressed":
        write(
          `  ${paint("yellow", "↺")} round ${e.round} scored ${e.score} < best ${e.best_score}: back to round ${e.best_round}`,
        );
        return;
      case "dod_verified":
        write(
          `${pass(paint, e.passed === true)} DoD on a fresh worktree: ${e.passed ? "passed" : "failed"}, exit ${e.exit_code}`,
        );
        return;
      case "preflight_refused":
        write(`${paint("red", "⊘")} refused by preflight`);
        return;
      case "task_error":
        write(`${paint("red", "✗")} error: ${short(e.message, 300)}`);
        return;
      case "task_finished":
        write(
          `${e.status === "passed" ? paint("green", "✓") : paint("red", "✗")} task ${e.status} (${e.stop_reason})`,
        );
        return;
    }
  };
}

/** `build`: the agents' rounds and tool calls (`ToolLoopEvent`s), each attempt's check as it closes. */
export function buildProgressPrinter(
  mode: ProgressMode,
  write: (line: string) => void,
): { agent: (e: ToolLoopEvent) => void; attempt: (a: AttemptReport) => void } {
  const paint = painter(mode.colour);
  return {
    agent: (e) => {
      switch (e.type) {
        case "round_start":
          write(`  ${paint("cyan", "●")} round ${e.round}`);
          return;
        case "model_retry":
          write(`    ${paint("yellow", "↻")} model retry ${e.attempt} (${e.kind}): ${short(e.message)}`);
          return;
        case "model_reply":
          if (e.text.trim()) write(`    ${paint("dim", short(e.text))}`);
          for (const c of e.toolCalls)
            write(`    ${paint("dim", "→")} ${c.name} ${paint("dim", short(c.args, 100))}`);
          return;
        case "tool_result":
          write(
            `    ${e.isError ? paint("red", "✗") : paint("dim", "←")} ${e.name}${e.isError ? `: ${short(e.content, 100)}` : ""}`,
          );
          return;
        case "stop":
          write(
            `  ${paint("dim", `agent stopped: ${e.stopReason}${e.detail ? ` (${short(e.detail, 80)})` : ""}`)}`,
          );
          return;
      }
    },
    attempt: (a) => {
      const ok = a.outcome === "passed";
      write(
        `${pass(paint, ok)} attempt ${a.n} ${paint("bold", a.kind)}: check ${a.outcome}${a.exit_code !== null ? `, exit ${a.exit_code}` : ""}${a.tokens ? `, ${a.tokens} tokens` : ""}`,
      );
      if (!ok && a.error) write(`    ${paint("red", short(a.error, 300))}`);
    },
  };
}
