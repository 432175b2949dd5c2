/**
 * `GET /events`: the events table as server-sent events. Every message carries `id:` (the event
 * id) and, as `data:`, the event row with its payload parsed. A client resumes after a disconnect
 * with `Last-Event-ID` (browsers send it themselves) or `?since=`; without either, only new events
 * arrive. Filters: `plan_id`, `entity_kind`, `entity_id`.
 *
 * Order of work per client: replay from the resume id in batches, then (in the same tick as the
 * last, empty, replay read) subscribe to the shared {@link EventHub}; rows at or below the last id
 * sent are skipped, so the hand-over neither loses nor repeats an event.
 */
import type { Context } from "hono";
import { type SSEStreamingApi, streamSSE } from "hono/streaming";
import { ErrorCode, RatchetError } from "../../core/index.js";
import type { EventRow } from "../../store/index.js";
import type { RouteGroup } from "../app.js";
import { type EventFilter, matches } from "../event-hub.js";
import { SSE_BATCH, SSE_KEEPALIVE_MS, SSE_MAX_QUEUED } from "../limits.js";

/** The SSE frame of one event: `id:` and the row (payload parsed) as one `data:` line. */
export function eventFrame(e: EventRow): string {
  // JSON.stringify escapes newlines, so the data is always a single line.
  return `id: ${e.id}\ndata: ${JSON.stringify({ ...e, payload: JSON.parse(e.payload) })}\n\n`;
}

/** The one writer of SSE frames: a batch of events in one write. */
export function writeEventFrames(stream: SSEStreamingApi, rows: readonly EventRow[]): Promise<unknown> {
  return stream.write(rows.map(eventFrame).join(""));
}

function resumeId(c: Context, lastEventId: number): number {
  const header = c.req.header("last-event-id");
  const raw = header !== undefined && header !== "" ? header : c.req.query("since");
  if (raw === undefined || raw === "") return lastEventId;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0)
    throw new RatchetError(ErrorCode.Usage, `Last-Event-ID / since must be an event id (got ${raw})`, {
      field: header ? "Last-Event-ID" : "since",
    });
  return n;
}

export const sseRoutes: RouteGroup = (app, { ctx }) => {
  app.get("/events", (c) => {
    const filter: EventFilter = {};
    const planId = c.req.query("plan_id");
    const entityKind = c.req.query("entity_kind");
    const entityId = c.req.query("entity_id");
    if (planId) filter.planId = planId;
    if (entityKind) filter.entityKind = entityKind;
    if (entityId) filter.entityId = entityId;
    let lastSent = resumeId(c, ctx.store.lastEventId());

    return streamSSE(c, async (stream) => {
      let closed = false;
      let queue: EventRow[] = [];
      let wake: (() => void) | undefined;
      let unsubscribe: (() => void) | undefined;
      const stop = () => {
        closed = true;
        unsubscribe?.();
        wake?.();
      };
      stream.onAbort(stop);
      c.req.raw.signal.addEventListener("abort", stop);
      const keepalive = setInterval(() => {
        if (!closed) void stream.write(": keepalive\n\n").catch(stop);
      }, SSE_KEEPALIVE_MS);
      keepalive.unref();
      try {
        await stream.write("retry: 1000\n: connected\n\n");
        // Replay, then subscribe in the same tick as the read that found nothing more.
        let lastQueued = lastSent;
        for (;;) {
          if (closed) return;
          const rows = ctx.store.listEvents({ ...filter, since: lastSent, limit: SSE_BATCH });
          if (rows.length === 0) {
            lastQueued = lastSent;
            unsubscribe = ctx.hub.subscribe((fresh) => {
              for (const e of fresh) {
                if (e.id <= lastQueued || !matches(e, filter)) continue;
                queue.push(e);
                lastQueued = e.id;
              }
              if (queue.length > SSE_MAX_QUEUED) stop(); // too slow: it resumes with Last-Event-ID
              wake?.();
            });
            break;
          }
          await writeEventFrames(stream, rows);
          lastSent = rows[rows.length - 1]!.id;
        }
        while (!closed) {
          if (queue.length === 0) {
            await new Promise<void>((res) => {
              wake = res;
            });
            wake = undefined;
            continue;
          }
          const batch = queue;
          queue = [];
          await writeEventFrames(stream, batch);
          lastSent = batch[batch.length - 1]!.id;
        }
      } finally {
        clearInterval(keepalive);
        stop();
      }
    });
  });
};
