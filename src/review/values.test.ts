import { describe, expect, it } from "vitest";
import {
  componentsAfterRoot,
  concat,
  describe as describeVal,
  escapesRoot,
  flatten,
  holeVal,
  joinPath,
  parentOf,
  reachesSibling,
  rootOf,
  textVal,
  UNKNOWN,
} from "./values.js";

const out = holeVal({ k: "env", name: "STEP_OUTPUT_DIR" });

describe("values", () => {
  it("concatenates, merging adjacent text", () => {
    const v = concat([textVal("exec"), textVal("ution/"), holeVal({ k: "argv" })]);
    expect(v.segs).toEqual([{ k: "text", s: "execution/" }, { k: "argv" }]);
    expect(flatten(v)).toBe("execution/\u0000");
  });

  it("joins like os.path.join: an absolute part restarts, path.join glues", () => {
    expect(flatten(joinPath([textVal("a/"), textVal("b")]))).toBe("a/b");
    expect(flatten(joinPath([out, textVal("/etc/x")]))).toBe("/etc/x");
    expect(flatten(joinPath([textVal("a"), textVal("/etc/x")], false))).toBe("a/etc/x");
    expect(joinPath([out, textVal("x")]).path).toBe(true);
  });

  it("classifies roots", () => {
    expect(rootOf(joinPath([out, textVal("x")])).kind).toBe("output");
    expect(rootOf(holeVal({ k: "env", name: "STEP_EXECUTION_DIR" })).kind).toBe("execution");
    expect(rootOf(holeVal({ k: "env", name: "HOME" }))).toEqual({ kind: "env", name: "HOME" });
    expect(rootOf(textVal("/tmp/x")).kind).toBe("absolute");
    expect(rootOf(textVal("C:\\Users\\x")).kind).toBe("absolute");
    expect(rootOf(textVal("~/x")).kind).toBe("home");
    expect(rootOf(textVal("out.json")).kind).toBe("relative");
    expect(rootOf(holeVal({ k: "param", name: "p" }))).toEqual({ kind: "param", name: "p" });
    expect(rootOf(UNKNOWN).kind).toBe("unknown");
  });

  it("tells when a path climbs above its root, and when it then names a sibling", () => {
    expect(escapesRoot(joinPath([out, textVal("a"), textVal(".."), textVal("b")]))).toBe(false);
    expect(escapesRoot(joinPath([out, textVal("..")]))).toBe(true);
    expect(escapesRoot(parentOf(out))).toBe(true);
    expect(reachesSibling(parentOf(out))).toBe(false);
    expect(reachesSibling(joinPath([parentOf(out), textVal("fetch")]))).toBe(true);
    expect(escapesRoot(textVal("../x"))).toBe(true);
    expect(componentsAfterRoot(textVal("/home/a/./b"))).toEqual(["home", "a", "b"]);
  });

  it("describes values for messages", () => {
    expect(describeVal(joinPath([parentOf(joinPath([out, textVal("a")])), textVal("b.json")]))).toBe(
      "$STEP_OUTPUT_DIR/b.json",
    );
    expect(describeVal(concat([holeVal({ k: "cwd" }), textVal("/./x")]))).toBe("<cwd>/x");
    expect(describeVal(textVal("x".repeat(100)), 10)).toHaveLength(10);
  });
});
