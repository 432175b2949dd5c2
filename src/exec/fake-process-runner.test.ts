import { describe, expect, it } from "vitest";
import { FakeProcessRunner } from "../testing/fake-process-runner.js";

describe("FakeProcessRunner", () => {
  it("records every request in order", async () => {
    const fake = new FakeProcessRunner().otherwise({});
    await fake.run({ command: "git", args: ["status"] });
    await fake.run({ command: "python3", args: ["main.py"], cwd: "/w" });
    expect(fake.requests.map((r) => [r.command, r.args, r.cwd])).toEqual([
      ["git", ["status"], undefined],
      ["python3", ["main.py"], "/w"],
    ]);
    expect(fake.calls("git")).toHaveLength(1);
    expect(fake.calls(/^py/)).toHaveLength(1);
  });

  it("matches by exact args, args predicate, RegExp command or request predicate; first match wins", async () => {
    const fake = new FakeProcessRunner()
      .on({ command: "git", args: ["status"] }, { stdout: "exact" })
      .on({ command: "git", args: (a) => a[0] === "diff" }, { stdout: "pred-args" })
      .on({ command: /python/ }, { stdout: "regexp" })
      .on((req) => req.cwd === "/special", { stdout: "pred-req" })
      .on({ command: "git" }, { stdout: "any-git" });
    const out = async (command: string, args: string[], cwd?: string) =>
      (await fake.run(cwd === undefined ? { command, args } : { command, args, cwd })).stdout;
    expect(await out("git", ["status"])).toBe("exact");
    expect(await out("git", ["diff", "--stat"])).toBe("pred-args");
    expect(await out("/usr/bin/python3", [])).toBe("regexp");
    expect(await out("make", [], "/special")).toBe("pred-req");
    expect(await out("git", ["status", "-s"])).toBe("any-git");
  });

  it("limits a script to `times` uses, then falls through", async () => {
    const fake = new FakeProcessRunner()
      .on({ command: "flaky" }, { exitCode: 1 }, { times: 2 })
      .on({ command: "flaky" }, { exitCode: 0 });
    const codes = [];
    for (let i = 0; i < 3; i++) codes.push((await fake.run({ command: "flaky" })).exitCode);
    expect(codes).toEqual([1, 1, 0]);
  });

  it("computes replies from the request, sync or async", async () => {
    const fake = new FakeProcessRunner().on({ command: "echo" }, async (req) => ({
      stdout: `${(req.args ?? []).join(" ")}\n`,
    }));
    expect((await fake.run({ command: "echo", args: ["a", "b"] })).stdout).toBe("a b\n");
  });

  it("answers unmatched requests with ENOENT naming the request, or the fallback", async () => {
    const r = await new FakeProcessRunner().run({ command: "nope", args: ["x"] });
    expect(r.spawnError).toEqual({
      code: "ENOENT",
      message: "FakeProcessRunner: no scripted reply for: nope x",
    });
    const f = await new FakeProcessRunner().otherwise({ exitCode: 7 }).run({ command: "nope" });
    expect(f.exitCode).toBe(7);
  });

  it("reports a scripted signal with exitCode null", async () => {
    const r = await new FakeProcessRunner().on({ command: "x" }, { signal: "SIGSEGV" }).run({ command: "x" });
    expect(r).toMatchObject({ exitCode: null, signal: "SIGSEGV" });
  });

  it("keeps binary output exact in byte counts", async () => {
    const r = await new FakeProcessRunner()
      .on({ command: "bin" }, { stdout: new Uint8Array([0xff, 0x41]) })
      .run({ command: "bin" });
    expect(r).toMatchObject({ stdout: "\uFFFDA", stdoutBytes: 2 });
  });
});
