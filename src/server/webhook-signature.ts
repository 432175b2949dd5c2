/**
 * HMAC signatures of webhook triggers. The sender computes
 * `HMAC-SHA256(secret, "<timestamp>.<raw body>")` and sends it as
 * `X-Ratchet-Signature: sha256=<hex>` with `X-Ratchet-Timestamp: <unix seconds>`. The timestamp is
 * inside the signed text, so it cannot be moved forward without the secret; a request older (or
 * newer) than {@link WEBHOOK_WINDOW_SECONDS} is refused, and one already accepted inside the window
 * is refused as a replay ({@link ReplayGuard}).
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { WEBHOOK_REPLAY_MAX, WEBHOOK_WINDOW_SECONDS } from "./limits.js";

export const SIGNATURE_HEADER = "x-ratchet-signature";
export const TIMESTAMP_HEADER = "x-ratchet-timestamp";

/** `sha256=<hex>` of `<timestamp>.<body>` under `secret`. */
export function signWebhook(secret: string, timestamp: number | string, body: string | Uint8Array): string {
  const h = createHmac("sha256", secret);
  h.update(`${timestamp}.`);
  h.update(body);
  return `sha256=${h.digest("hex")}`;
}

/** Why a signature was refused (the reply names it; none of them reveals the expected value). */
export type SignatureRefusal =
  | "missing_timestamp"
  | "bad_timestamp"
  | "stale_timestamp"
  | "bad_signature"
  | "replayed";

export const REFUSAL_MESSAGES: Record<SignatureRefusal, string> = {
  missing_timestamp: "the X-Ratchet-Timestamp header (unix seconds) is missing",
  bad_timestamp: "the X-Ratchet-Timestamp header must be whole unix seconds",
  stale_timestamp: `the X-Ratchet-Timestamp is more than ${WEBHOOK_WINDOW_SECONDS / 60} minutes from the server's clock`,
  bad_signature: 'the X-Ratchet-Signature does not match the body (sha256=<hex> of "<timestamp>.<body>")',
  replayed: "this signed request was already accepted (replay)",
};

/**
 * Checks a signature in constant time (the comparison does not depend on where the digests differ).
 * `nowSeconds` comes in as an argument (tests pass their clock).
 */
export function checkSignature(opts: {
  secret: string;
  signature: string;
  timestamp: string | undefined;
  body: Uint8Array;
  nowSeconds: number;
}): SignatureRefusal | undefined {
  if (opts.timestamp === undefined || opts.timestamp === "") return "missing_timestamp";
  if (!/^\d{1,12}$/.test(opts.timestamp)) return "bad_timestamp";
  if (Math.abs(opts.nowSeconds - Number(opts.timestamp)) > WEBHOOK_WINDOW_SECONDS) return "stale_timestamp";
  const expected = Buffer.from(signWebhook(opts.secret, opts.timestamp, opts.body));
  const given = Buffer.from(opts.signature.trim());
  // timingSafeEqual needs equal lengths; compare against itself to spend the same time.
  const same = given.length === expected.length && timingSafeEqual(given, expected);
  if (given.length !== expected.length) timingSafeEqual(expected, expected);
  return same ? undefined : "bad_signature";
}

/**
 * The signatures accepted in the last window, per server process: a second request with one of
 * them is a replay. Entries expire with the window (a request outside it is refused as stale), and
 * the set is bounded (the oldest entries go first).
 */
export class ReplayGuard {
  readonly #seen = new Map<string, number>();

  /** Records `signature` as used at `nowSeconds`; false when it was already used in the window. */
  use(signature: string, nowSeconds: number): boolean {
    for (const [sig, at] of this.#seen) {
      if (at >= nowSeconds - 2 * WEBHOOK_WINDOW_SECONDS && this.#seen.size < WEBHOOK_REPLAY_MAX) break;
      this.#seen.delete(sig);
    }
    if (this.#seen.has(signature)) return false;
    this.#seen.set(signature, nowSeconds);
    return true;
  }
}
