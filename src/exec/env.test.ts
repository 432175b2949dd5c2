import { describe, expect, it } from "vitest";
import { isRatchetError } from "../core/index.js";
import { buildEnv, MINIMAL_ENV_KEYS } from "./env.js";

const base = {
  PATH: "/usr/bin",
  HOME: "/home/u",
  LANG: "C.UTF-8",
  TERM: "xterm",
  SECRET_TOKEN: "s3cret",
  AWS_ACCESS_KEY_ID: "AKIA",
  NODE_OPTIONS: "--inspect",
  UNSET: undefined,
};

describe("buildEnv", () => {
  it("minimal keeps only the documented keys that are set (and is the default)", () => {
    const env = buildEnv({ base });
    expect(env).toEqual({ PATH: "/usr/bin", HOME: "/home/u", LANG: "C.UTF-8", TERM: "xterm" });
    expect(buildEnv({ base, inherit: "minimal" })).toEqual(env);
    expect([...MINIMAL_ENV_KEYS].sort()).toEqual(
      ["HOME", "LANG", "LC_ALL", "PATH", "SHELL", "TERM", "TMPDIR", "TZ", "USER"].sort(),
    );
  });

  it("all copies every defined variable; none copies nothing", () => {
    expect(Object.keys(buildEnv({ base, inherit: "all" })).sort()).toEqual(
      ["AWS_ACCESS_KEY_ID", "HOME", "LANG", "NODE_OPTIONS", "PATH", "SECRET_TOKEN", "TERM"].sort(),
    );
    expect(buildEnv({ base, inherit: "none" })).toEqual({});
  });

  it("drop removes exact names and RegExp matches, then set applies (undefined deletes)", () => {
    const env = buildEnv({
      base,
      inherit: "all",
      drop: ["NODE_OPTIONS", /^SECRET_/g, /^AWS_/],
      set: { SECRET_TOKEN: "given", HOME: undefined, STEP_OUTPUT_DIR: "/out" },
    });
    expect(env).toEqual({
      PATH: "/usr/bin",
      LANG: "C.UTF-8",
      TERM: "xterm",
      SECRET_TOKEN: "given",
      STEP_OUTPUT_DIR: "/out",
    });
  });

  it("uses process.env when no base is given and does not mutate it", () => {
    const before = { ...process.env };
    const env = buildEnv({ inherit: "all", set: { RATCHET_ENV_TEST: "1" } });
    expect(env["RATCHET_ENV_TEST"]).toBe("1");
    expect(process.env).toEqual(before);
  });

  it("rejects names and values a child cannot receive", () => {
    for (const set of [{ "A=B": "x" }, { "": "x" }, { A: "x\0y" }]) {
      let caught: unknown;
      try {
        buildEnv({ inherit: "none", set });
      } catch (err) {
        caught = err;
      }
      expect(isRatchetError(caught, "invalid_value")).toBe(true);
    }
  });
});
