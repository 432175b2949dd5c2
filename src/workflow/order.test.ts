import { describe, expect, it } from "vitest";
import { RatchetError } from "../core/errors.js";
import { executionOrder, parseOnly, selectSteps } from "./order.js";

const s = (id: string, ...deps: string[]) => ({ id, context_dependencies: deps });

describe("executionOrder", () => {
  it("keeps file order when dependencies allow it", () => {
    expect(executionOrder([s("a"), s("b", "a"), s("c")])).toEqual(["a", "b", "c"]);
  });

  it("moves a step after its dependencies, ties in file order", () => {
    expect(
      executionOrder([s("report", "fetch", "clean"), s("fetch"), s("clean", "fetch"), s("other")]),
    ).toEqual(["fetch", "clean", "report", "other"]);
  });

  it("refuses an unknown dependency, naming both steps", () => {
    expect(() => executionOrder([s("a", "ghost")])).toThrow(/step a depends on unknown step ghost/);
  });

  it("refuses a cycle, naming the steps in it", () => {
    try {
      executionOrder([s("x"), s("a", "b"), s("b", "a")]);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(RatchetError);
      expect((e as RatchetError).code).toBe("schema_violation");
      expect((e as RatchetError).message).toMatch(/cycle among a, b/);
    }
  });
});

describe("selectSteps", () => {
  const order = ["fetch", "clean", "report"];

  it("selects everything without --only", () => {
    expect(selectSteps(order, undefined)).toEqual(order);
    expect(selectSteps(order, [])).toEqual(order);
  });

  it("keeps execution order whatever the --only order", () => {
    expect(selectSteps(order, ["report", "fetch"])).toEqual(["fetch", "report"]);
  });

  it("refuses unknown steps with a usage error listing the real ones", () => {
    try {
      selectSteps(order, ["fetch", "nope"]);
      expect.unreachable();
    } catch (e) {
      expect((e as RatchetError).code).toBe("usage");
      expect((e as RatchetError).message).toBe(
        "--only: no step nope in this workflow (steps: fetch, clean, report)",
      );
    }
  });
});

describe("parseOnly", () => {
  it("splits commas and spaces across repeated flags", () => {
    expect(parseOnly(["a,b", "c", " d , e "])).toEqual(["a", "b", "c", "d", "e"]);
    expect(parseOnly("a")).toEqual(["a"]);
  });

  it("reads nothing as no selection", () => {
    expect(parseOnly(undefined)).toBeUndefined();
    expect(parseOnly([",", " "])).toBeUndefined();
  });
});
