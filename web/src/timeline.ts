/**
 * The timeline: a Gantt view of a plan's (or a run's) steps. Each started step is a bar from its start for its
 * duration; steps whose times overlap get separate lanes; a step's children (sub-steps, retries)
 * are drawn under it, indented. A running step's bar reaches "now" and its elapsed time ticks.
 */
import type { Json } from "./api.js";
import { h } from "./dom.js";
import { bars } from "./lanes.js";

export { type Bar, bars } from "./lanes.js";

export function elapsed(ms: number): string {
  const s = Math.max(0, ms) / 1000;
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.floor(s % 60)} s`;
}

let ticker: ReturnType<typeof setInterval> | undefined;

/** The timeline of a plan's steps; `href(step)` links each bar to its step. */
export function timeline(steps: readonly Json[], href: (s: Json) => string): HTMLElement {
  const now = Date.now();
  const bs = bars(steps, now);
  if (bs.length === 0) return h("p", { class: "empty", "data-timeline": "" }, "No step has started yet.");
  const t0 = Math.min(...bs.map((b) => b.start));
  const t1 = Math.max(...bs.map((b) => b.end), t0 + 1);
  const span = t1 - t0;
  const el = h(
    "div",
    { class: "timeline", "data-timeline": "", "data-lanes": String(Math.max(...bs.map((b) => b.lane)) + 1) },
    bs.map((b) =>
      h(
        "div",
        { class: "tl-row", "data-depth": String(b.depth) },
        h("a", { class: "tl-label", href: href(b.step), title: b.step.step_id }, b.step.title),
        h(
          "div",
          { class: "tl-track" },
          h("div", {
            class: `tl-bar step-${String(b.step.status).toLowerCase()}${b.running ? " running" : ""}`,
            style: `left:${((b.start - t0) / span) * 100}%;width:${Math.max(0.5, ((b.end - b.start) / span) * 100)}%`,
            "data-bar": b.step.step_id,
            "data-lane": String(b.lane),
            "data-start": String(b.start),
          }),
        ),
        h(
          "span",
          {
            class: "tl-time meta",
            "data-elapsed": b.step.step_id,
            "data-running": b.running ? "1" : undefined,
          },
          elapsed(b.end - b.start),
        ),
      ),
    ),
  );
  // Positions through the CSSOM: the page's CSP allows no inline style attributes.
  for (const b of bs) {
    const bar = el.querySelector<HTMLElement>(`[data-bar="${CSS.escape(b.step.step_id)}"]`)!;
    bar.style.left = `${((b.start - t0) / span) * 100}%`;
    bar.style.width = `${Math.max(0.5, ((b.end - b.start) / span) * 100)}%`;
    (bar.closest(".tl-row") as HTMLElement).style.paddingLeft = `${b.depth * 14}px`;
  }
  // Running steps' elapsed time ticks between live updates.
  if (ticker) clearInterval(ticker);
  if (bs.some((b) => b.running))
    ticker = setInterval(() => {
      for (const span of document.querySelectorAll<HTMLElement>("[data-elapsed][data-running]")) {
        const bar = document.querySelector<HTMLElement>(`[data-bar="${CSS.escape(span.dataset.elapsed!)}"]`);
        if (bar) span.textContent = elapsed(Date.now() - Number(bar.dataset.start));
      }
    }, 500);
  return el;
}
