/** The webhook signature rules, pure: what a forger, a replayer and a clock-skewer can try. */
import { describe, expect, it } from "vitest";
import { WEBHOOK_REPLAY_MAX, WEBHOOK_WINDOW_SECONDS } from "./limits.js";
import { checkSignature, ReplayGuard, signWebhook } from "./webhook-signature.js";

const SECRET = "s3cret-0123456789";
const body = Buffer.from('{"vars":{"names":"Ada"}}');
const NOW = 1_900_000_000;

const check = (o: Partial<Parameters<typeof checkSignature>[0]>) =>
  checkSignature({
    secret: SECRET,
    signature: signWebhook(SECRET, NOW, body),
    timestamp: String(NOW),
    body,
    nowSeconds: NOW,
    ...o,
  });

describe("checkSignature", () => {
  it("accepts the signature of these bytes at this timestamp, up to the window's edge", () => {
    expect(check({})).toBeUndefined();
    const edge = NOW - WEBHOOK_WINDOW_SECONDS;
    expect(check({ timestamp: String(edge), signature: signWebhook(SECRET, edge, body) })).toBeUndefined();
  });

  it("refuses another secret, another body, a moved timestamp, a truncated or re-cased digest", () => {
    const good = signWebhook(SECRET, NOW, body);
    expect(check({ signature: signWebhook("other", NOW, body) })).toBe("bad_signature");
    expect(check({ body: Buffer.from(`${body.toString()} `) })).toBe("bad_signature");
    expect(check({ timestamp: String(NOW - 1) })).toBe("bad_signature");
    expect(check({ signature: good.slice(0, -1) })).toBe("bad_signature");
    expect(check({ signature: good.toUpperCase() })).toBe("bad_signature");
    expect(check({ signature: good.replace("sha256=", "sha1=") })).toBe("bad_signature");
    expect(check({ signature: "" })).toBe("bad_signature");
  });

  it("refuses a missing, malformed or out-of-window timestamp (past and future)", () => {
    expect(check({ timestamp: undefined })).toBe("missing_timestamp");
    expect(check({ timestamp: "" })).toBe("missing_timestamp");
    for (const t of ["-5", "1e9", " 1900000000", "0x10", "1900000000.5"])
      expect(check({ timestamp: t }), t).toBe("bad_timestamp");
    for (const t of [NOW - WEBHOOK_WINDOW_SECONDS - 1, NOW + WEBHOOK_WINDOW_SECONDS + 1])
      expect(check({ timestamp: String(t), signature: signWebhook(SECRET, t, body) })).toBe(
        "stale_timestamp",
      );
  });
});

describe("ReplayGuard", () => {
  it("accepts a signature once inside the window", () => {
    const g = new ReplayGuard();
    expect(g.use("sha256=a", NOW)).toBe(true);
    expect(g.use("sha256=a", NOW + 10)).toBe(false);
    expect(g.use("sha256=b", NOW + 10)).toBe(true);
  });

  it("keeps a signature for the whole window of its timestamp, and stays bounded", () => {
    const g = new ReplayGuard();
    g.use("sha256=first", NOW);
    // still remembered at the last second it could pass the timestamp check
    expect(g.use("sha256=first", NOW + WEBHOOK_WINDOW_SECONDS * 2)).toBe(false);
    for (let i = 0; i < WEBHOOK_REPLAY_MAX + 10; i++) g.use(`sha256=${i}`, NOW + 1);
    // the newest are remembered even after the bound pushed the oldest out
    expect(g.use(`sha256=${WEBHOOK_REPLAY_MAX + 9}`, NOW + 1)).toBe(false);
  });
});
