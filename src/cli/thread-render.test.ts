// How chat and `thread start` render what a driver reports: colour on a terminal only.
import { describe, expect, it } from "vitest";
import { renderEvent, useColor } from "./thread-render.js";

const render = (e: Parameters<typeof renderEvent>[0], color: boolean) => {
  let out = "";
  renderEvent(
    e,
    (s) => (out += s),
    () => "th-1",
    color,
  );
  return out;
};

describe("thread rendering", () => {
  it("◈ skills in cyan on a terminal, plain when piped or with NO_COLOR", () => {
    const skills = { type: "skills" as const, names: ["github", "linear"] };
    expect(render(skills, true)).toBe("\x1b[36m◈ skills: github, linear\x1b[0m\n");
    expect(render(skills, false)).toBe("◈ skills: github, linear\n");
    expect(useColor({ isTTY: true }, {})).toBe(true);
    expect(useColor({ isTTY: true }, { NO_COLOR: "1" })).toBe(false);
    expect(useColor({ isTTY: false }, {})).toBe(false);
    expect(useColor({}, {})).toBe(false);
  });

  it("a pending approval shows the call's arguments and how to decide it", () => {
    const out = render(
      { type: "approval", approvalId: "ap-1", action: "append", callId: "k1", args: { line: "x" } },
      false,
    );
    expect(out).toContain('approval needed: append {"line":"x"} (call k1)');
    expect(out).toContain("ratchet thread approve th-1");
  });
});
