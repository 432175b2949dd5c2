/** How `ratchet thread` and `ratchet chat` show what a driver reports. */
import type { DriveEvent } from "../threads/index.js";

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
