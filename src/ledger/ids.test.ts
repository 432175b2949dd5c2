import { describe, expect, it } from "vitest";
import { childStepId, planIdFor, reviewStepId, stepLetters, topStepId } from "./ids.js";

describe("stepLetters", () => {
  it.each([
    [0, "A"],
    [1, "B"],
    [25, "Z"],
    [26, "AA"],
    [27, "AB"],
    [51, "AZ"],
    [52, "BA"],
    [701, "ZZ"],
    [702, "AAA"],
    [703, "AAB"],
  ])("%i → %s", (n, letters) => {
    expect(stepLetters(n)).toBe(letters);
  });

  it("is one-to-one and ordered by length then alphabet over the first 1000", () => {
    const all = Array.from({ length: 1000 }, (_, i) => stepLetters(i));
    expect(new Set(all).size).toBe(1000);
    const sorted = [...all].sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
    expect(sorted).toEqual(all);
  });
});

describe("step id shapes", () => {
  it("top-level, child and review ids", () => {
    expect(topStepId("p-20260101000000", 0)).toBe("p-20260101000000-A");
    expect(topStepId("p", 26)).toBe("p-AA");
    expect(childStepId("p-D", 1)).toBe("p-D.1");
    expect(childStepId(childStepId("p-D", 1), 2)).toBe("p-D.1.2");
    expect(reviewStepId("p")).toBe("p-REVIEW");
    expect(childStepId(reviewStepId("p"), 1)).toBe("p-REVIEW.1");
  });
});

describe("planIdFor", () => {
  const stamp = "20260514153045";
  it.each([
    ["Fix login bug", "fix-login-bug"],
    ["  Fix   LOGIN bug!!  ", "fix-login-bug"],
    ["deploy v2.3 to prod", "deploy-v2-3-to-prod"],
    ["Café déjà vu", "cafe-deja-vu"],
    ["snake_case and/slashes", "snake-case-and-slashes"],
    ["日本語", "plan"],
    ["!!!", "plan"],
    ["", "plan"],
    ["a".repeat(60), "a".repeat(40)],
    // Cut at 40 characters, then trailing dashes trimmed.
    [`${"b".repeat(39)} tail`, "b".repeat(39)],
  ])("%j → %s-<stamp>", (goal, slug) => {
    expect(planIdFor(goal, stamp)).toBe(`${slug}-${stamp}`);
  });

  it("only ever yields lowercase letters, digits and single dashes", () => {
    for (const goal of ["A -- B", "x\ny\tz", "emoji 😀 here", "--lead and trail--"]) {
      expect(planIdFor(goal, stamp)).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*-20260514153045$/);
    }
  });
});
