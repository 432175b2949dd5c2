/**
 * Live progress of `ratchet run` on a terminal: each step as it starts and as it ends with its
 * elapsed time, and the script's output as it arrives (indented, at most
 * {@link LIVE_TAIL_LINES} lines a step; the rest is counted). Colour on a terminal unless
 * `NO_COLOR` is set. Piped output keeps the plain per-step lines; `--json` prints only the report;
 * `--quiet` prints nothing but errors.
 *
 * `RATCHET_PROGRESS=tty` forces terminal mode on a pipe (tests, CI logs); `RATCHET_PROGRESS=plain`
 * forces the piped form on a terminal.
 */
import type { RunProgress } from "../workflow/index.js";
import { type ProgressMode, painter } from "./progress.js";

export { type ProgressMode, progressMode } from "./progress.js";

/** Output lines of one step shown live (the full output is in the step's ledger log). */
export const LIVE_TAIL_LINES = 200;

/** A progress printer for one run (state: the running step's start time and shown lines). */
export function progressPrinter(
  mode: ProgressMode,
  write: (line: string) => void,
  now: () => number = () => performance.now(),
): (p: RunProgress) => void {
  const paint = painter(mode.colour);
  const started = new Map<string, number>();
  const shown = new Map<string, number>();
  const hidden = new Map<string, number>();
  const pending = new Map<string, string>();
  const elapsed = (id: string) => `${((now() - (started.get(id) ?? now())) / 1000).toFixed(1)} s`;
  const line = (id: string, text: string) => {
    const n = shown.get(id) ?? 0;
    if (n >= LIVE_TAIL_LINES) {
      hidden.set(id, (hidden.get(id) ?? 0) + 1);
      return;
    }
    shown.set(id, n + 1);
    write(`${paint("dim", "  │")} ${text.replace(/\r$/, "")}`);
  };
  return (p) => {
    switch (p.kind) {
      case "step_started":
        started.set(p.step_id, now());
        write(`${paint("cyan", "▶")} ${paint("bold", p.step_id)} ${paint("dim", `(${p.mode})`)} started`);
        return;
      case "step_output": {
        const text = (pending.get(p.step_id) ?? "") + p.text;
        const parts = text.split("\n");
        pending.set(p.step_id, parts.pop() ?? "");
        for (const l of parts) line(p.step_id, l);
        return;
      }
      case "step_finished": {
        const s = p.step;
        const rest = pending.get(s.step_id);
        if (rest) line(s.step_id, rest);
        const more = hidden.get(s.step_id);
        if (more) write(paint("dim", `  │ … ${more} more line(s) (ratchet plan show --full)`));
        const ok = s.outcome === "passed";
        const mark = ok
          ? paint("green", "✓")
          : s.outcome === "skipped"
            ? paint("yellow", "–")
            : paint("red", "✗");
        const info = `${s.outcome}${s.exit_code !== null ? `, exit ${s.exit_code}` : ""}${s.fast_path ? ", fast path" : ""}${s.tokens ? `, ${s.tokens} tokens` : ""}`;
        write(`${mark} ${paint("bold", s.step_id)} ${info} in ${elapsed(s.step_id)}`);
        if (s.error && !ok) for (const l of s.error.split("\n").slice(0, 20)) write(`    ${paint("red", l)}`);
        return;
      }
    }
  };
}
