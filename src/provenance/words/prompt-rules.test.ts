import { describe, expect, it } from "vitest";
import { HOST_PREFIXES, skipReason, sourceHint, sourceKind } from "./prompt-rules.js";

describe("the prompt hook's skip rules", () => {
  it("skips empty and whitespace-only prompts", () => {
    expect(skipReason("", {})).toBe("empty");
    expect(skipReason(" \n\t ", {})).toBe("empty");
  });

  it("skips slash commands, also after leading whitespace", () => {
    expect(skipReason("/compact", {})).toBe("slash_command");
    expect(skipReason("  /review now", {})).toBe("slash_command");
    // A path inside a sentence is not a slash command.
    expect(skipReason("look at /etc/hosts", {})).toBeUndefined();
  });

  it.each(HOST_PREFIXES.map((p) => [p]))("skips text the host injects: %s", (prefix) => {
    expect(skipReason(`${prefix}done</x>`, {})).toBe("host_injected");
    expect(skipReason(`\n  ${prefix} after whitespace`, {})).toBe("host_injected");
    // The prefix inside the user's words does not hide them.
    expect(skipReason(`please keep ${prefix} out`, {})).toBeUndefined();
  });

  it("skips everything in headless mode, by the original's switch and by Ratchet's", () => {
    expect(skipReason("Keep fiscal weeks", { PROVLEDGER_HEADLESS: "1" })).toBe("headless");
    expect(skipReason("Keep fiscal weeks", { RATCHET_HEADLESS: "1" })).toBe("headless");
    expect(
      skipReason("Keep fiscal weeks", { RATCHET_HEADLESS: "0", PROVLEDGER_HEADLESS: "" }),
    ).toBeUndefined();
  });

  it("records ordinary words", () => {
    expect(skipReason("Keep fiscal weeks in load_orders.", {})).toBeUndefined();
  });
});

describe("the source hint", () => {
  it("names the kind the prompt's words point at, by whole words", () => {
    expect(sourceKind("as the CFO said in her email yesterday")).toBe("email");
    expect(sourceKind("we agreed in the Monday meeting")).toBe("meeting");
    expect(sourceKind("see the Slack thread")).toBe("chat");
    expect(sourceKind("per JIRA-123")).toBe("ticket");
    expect(sourceKind("it is in the Confluence page")).toBe("doc");
    expect(sourceKind("rename the emailer module")).toBeUndefined();
    expect(sourceKind("update the docs and fix the loader")).toBeUndefined();
    expect(sourceKind("Keep fiscal weeks")).toBeUndefined();
  });

  it("is one plain line with a ready command", () => {
    const hint = sourceHint("email", 42);
    expect(hint).not.toContain("\n");
    expect(hint).toContain("ratchet reference add --utterance 42 --kind email --label");
    expect(hint).toContain("--occurred-at");
    expect(hint).toContain("--uri");
  });
});
