import { describe, expect, it } from "vitest";
import { bindHostName, hostAllowed, originAllowed, splitHostPort } from "./hosts.js";

const policy = (allowed: string[] = [], port: number | undefined = 8765) => ({ allowed, port: () => port });

describe("splitHostPort", () => {
  it("splits names, IPv4 and bracketed IPv6, lower-cased, trailing dot dropped", () => {
    expect(splitHostPort("LocalHost:8765")).toEqual({ name: "localhost", port: 8765 });
    expect(splitHostPort("[::1]")).toEqual({ name: "[::1]" });
    expect(splitHostPort("example.com.")).toEqual({ name: "example.com" });
    for (const bad of ["", "a b", "host:0", "host:70000", "::1", "user@host", "host:12x"])
      expect(splitHostPort(bad), bad).toBeUndefined();
  });
});

describe("hostAllowed", () => {
  it("answers loopback names with the bound port or none", () => {
    for (const h of ["127.0.0.1", "127.0.0.1:8765", "localhost", "LOCALHOST:8765", "[::1]:8765"])
      expect(hostAllowed(h, policy()), h).toBe(true);
    for (const h of [
      "localhost:1",
      "evil.example",
      "evil.example:8765",
      "127.0.0.1.evil.example",
      "0x7f000001",
    ])
      expect(hostAllowed(h, policy()), h).toBe(false);
  });
  it("answers configured hosts: a bare name on any port, name:port on that port", () => {
    const p = policy(["ratchet.internal", "box.lan:9"]);
    expect(hostAllowed("ratchet.internal:1234", p)).toBe(true);
    expect(hostAllowed("box.lan:9", p)).toBe(true);
    expect(hostAllowed("box.lan", p)).toBe(false);
    expect(hostAllowed("box.lan:8765", p)).toBe(false);
  });
  it("judges an absent header by the fallback (the URL host)", () => {
    expect(hostAllowed(undefined, policy(), "localhost")).toBe(true);
    expect(hostAllowed(undefined, policy(), "evil.example")).toBe(false);
  });
  it("before the port is known, loopback on any port", () => {
    expect(hostAllowed("localhost:1", { allowed: [], port: () => undefined })).toBe(true);
  });
});

describe("originAllowed", () => {
  it("absent passes; the server's own origin passes; others are foreign", () => {
    const p = policy(["ratchet.internal"]);
    for (const o of [
      undefined,
      "http://127.0.0.1:8765",
      "https://localhost:8765",
      "https://ratchet.internal",
    ])
      expect(originAllowed(o, p), String(o)).toBe(true);
    for (const o of [
      "null",
      "http://evil.example",
      "http://localhost",
      "http://localhost:1",
      "file://",
      "chrome-extension://x",
      "http://127.0.0.1:8765/path",
    ])
      expect(originAllowed(o, p), o).toBe(false);
  });
  it("a loopback origin without a port means the scheme's default port", () => {
    expect(originAllowed("http://localhost", policy([], 80))).toBe(true);
  });
});

describe("bindHostName", () => {
  it("brackets IPv6 and drops wildcards", () => {
    expect(bindHostName("::1")).toBe("[::1]");
    expect(bindHostName("0.0.0.0")).toBeUndefined();
    expect(bindHostName("::")).toBeUndefined();
    expect(bindHostName("10.0.0.5")).toBe("10.0.0.5");
  });
});
