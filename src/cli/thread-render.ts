/** How `ratchet thread` and `ratchet chat` show what a driver reports. */
import { type DriveEvent, ThreadEvent } from "../threads/index.js";
import { type Paint, short } from "./progress.js";

/** Colour only on a terminal, and never with `NO_COLOR` set (https://no-color.org). */
export function useColor(
  stream: { isTTY?: boolean } = process.stdout,
  env: Record<string, string | undefined> = process.env,
): boolean {
  return stream.isTTY === true && !env.NO_COLOR;
}

/** Renders what a driver reports: streamed text, tool calls, approvals, `◈ skills: …` lines. */
export function renderEvent(
  e: DriveEvent,
  write: (s: string) => void,
  threadId: () => string,
  color = useColor(),
): void {
  const cyan = (s: string) => (color ? `\x1b[36m${s}\x1b[0m` : s);
  const dim = (s: string) => (color ? `\x1b[2m${s}\x1b[0m` : s);
  switch (e.type) {
    case "text":
      write(e.delta);
      break;
    case "skills":
      write(`${cyan(`◈ skills: ${e.names.join(", ")}`)}\n`);
      break;
    case "action": {
      const mark = { running: "→", succeeded: "✓", failed: "✗", denied: "⊘" }[e.status];
      write(`${dim(`${mark} ${e.name} ${e.status === "running" ? JSON.stringify(e.args) : e.status}`)}\n`);
      break;
    }
    case "approval":
      write(
        `\n⏸ approval needed: ${e.action} ${JSON.stringify(e.args)} (call ${e.callId})\n  ratchet thread approve ${threadId()} [--always]   |   ratchet thread deny ${threadId()}\n`,
      );
      break;
    case "code":
      write(`${dim(`▸ code step output:\n${e.output}`)}\n`);
      break;
    case "state":
      if (e.state === "failed") write(`\n${dim(`[${e.state}${e.reason ? `: ${e.reason}` : ""}]`)}\n`);
      break;
  }
}

/** A row of the event log as `thread watch` reads it. */
export interface WatchedEvent {
  id: number;
  at: string;
  type: string;
  /** JSON text. */
  payload: string;
}

/** A stored message of the thread (the `thread.message` event names it, this is its text). */
export interface WatchedMessage {
  role: string;
  content: string;
  tool_calls: string | null;
  call_id: string | null;
  tool_name: string | null;
  is_error: number;
}

/** Lines of a message's text shown by `thread watch` (the rest: `thread show`). */
export const WATCH_TEXT_LINES = 40;

function clip(text: string, max = WATCH_TEXT_LINES): string[] {
  const lines = text.replace(/\s+$/, "").split("\n");
  return lines.length > max
    ? [...lines.slice(0, max), `… ${lines.length - max} more line(s) (ratchet thread show)`]
    : lines;
}

/**
 * `thread watch`: one event of the thread as lines a person reads — messages with their role and
 * text, tool calls and results, approvals asked and decided, state changes, skills. `message` is
 * the stored message a `thread.message` event stands for.
 */
export function renderWatchEvent(
  e: WatchedEvent,
  message: WatchedMessage | undefined,
  threadId: string,
  paint: Paint,
): string[] {
  let p: Record<string, unknown> = {};
  try {
    p = JSON.parse(e.payload) as Record<string, unknown>;
  } catch {
    // A payload that is not JSON is shown under its type.
  }
  const s = (v: unknown) => (v === null || v === undefined ? "" : String(v));
  switch (e.type) {
    case ThreadEvent.Created:
      return [`${paint("cyan", "●")} thread ${paint("bold", threadId)}: ${short(p.goal, 200)}`];
    case ThreadEvent.StateChanged:
      return [paint("dim", `[${s(p.from)} → ${s(p.to)}${p.reason ? `: ${short(p.reason)}` : ""}]`)];
    case ThreadEvent.Message: {
      if (!message) return [paint("dim", `${s(p.role)}: (${s(p.chars)} characters)`)];
      if (message.role === "tool") {
        const head = message.is_error
          ? `${paint("red", "✗")} ${s(message.tool_name)} error`
          : `${paint("green", "←")} ${s(message.tool_name)} result`;
        return [head, ...clip(message.content, 8).map((l) => `    ${paint("dim", l)}`)];
      }
      const out: string[] = [];
      const who = message.role === "user" ? paint("cyan", "user") : paint("bold", message.role);
      const text = clip(message.content);
      if (message.content.trim()) out.push(`${who}: ${text[0]}`, ...text.slice(1).map((l) => `  ${l}`));
      else if (!message.tool_calls) out.push(`${who}: ${paint("dim", "(empty)")}`);
      let calls: { id?: string; name?: string; args?: unknown }[] = [];
      try {
        calls = message.tool_calls ? (JSON.parse(message.tool_calls) as typeof calls) : [];
      } catch {
        // Not a list: nothing more to show.
      }
      for (const c of Array.isArray(calls) ? calls : [])
        out.push(`  ${paint("dim", "→")} ${s(c.name)} ${paint("dim", short(c.args ?? {}, 160))}`);
      return out;
    }
    case ThreadEvent.ApprovalRequested:
      return [
        `${paint("yellow", "⏸")} approval needed: ${s(p.action)} ${short(p.args ?? {}, 160)} (call ${s(p.call_id)})`,
        paint("dim", `  ratchet thread approve ${threadId} [--always]   |   ratchet thread deny ${threadId}`),
      ];
    case ThreadEvent.ApprovalDecided: {
      const ok = p.status === "approved";
      return [
        `${ok ? paint("green", "✓") : paint("red", "⊘")} ${s(p.action)} ${s(p.status)}${p.always ? " (always)" : ""}${p.by ? ` by ${s(p.by)}` : ""}${p.reason ? `: ${short(p.reason)}` : ""}`,
      ];
    }
    case ThreadEvent.ActionCompleted: {
      const mark = { succeeded: paint("green", "✓"), failed: paint("red", "✗"), denied: paint("red", "⊘") }[
        s(p.status)
      ];
      return [`${mark ?? "·"} ${s(p.action)} ${s(p.status)}${p.error ? `: ${short(p.error)}` : ""}`];
    }
    case ThreadEvent.SkillActivated:
    case ThreadEvent.SkillsActive: {
      const names = (p.skill_names ?? p.names) as unknown;
      return [paint("cyan", `◈ skills: ${Array.isArray(names) ? names.join(", ") : s(names)}`)];
    }
    case ThreadEvent.LlmCompleted:
      return [paint("dim", `· model: ${s(p.input_tokens)} in, ${s(p.output_tokens)} out tokens`)];
    case ThreadEvent.MessageInjected:
    case ThreadEvent.StepCompleted:
    case ThreadEvent.TransitionRequested:
      return [];
    case ThreadEvent.CodeStep:
      return [
        paint("dim", `▸ code step: ${s(p.actions)} action(s)${p.error ? `, error: ${short(p.error)}` : ""}`),
      ];
    case ThreadEvent.CancelRequested:
      return [paint("yellow", "⏹ cancel requested")];
    default:
      return [paint("dim", `· ${e.type}`)];
  }
}
