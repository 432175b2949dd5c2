/**
 * Text renders of `why` and `headline show` (pure). A record's line carries its id, tier, evidence
 * level, date, the times it was shown per moment (never a summed total, spec §2.3) and the plans
 * that adopted it; the quoted words follow with the span marked «…», then its sources with their
 * verifiability.
 */
import type { HeadlineDoc } from "./headline.js";
import type { BoundedRead, ReadRecord, Section } from "./read.js";
import type { WhyResult } from "./why.js";

const date = (iso: string) => iso.replace("T", " ").slice(0, 16);
const level = (l: string) => l.replace("_", " ");

/** `shown plan 1, why 2` (moments with a count), `shown 0` when never shown. */
export function shownText(s: ReadRecord["shown"]): string {
  const parts = (["plan", "edit", "close", "why"] as const)
    .filter((m) => s[m] > 0)
    .map((m) => `${m} ${s[m]}`);
  return `shown ${parts.length ? parts.join(", ") : "0"}`;
}

export function recordLines(r: ReadRecord): string[] {
  const head = [
    ` #${r.id}`,
    r.tier,
    level(r.evidence_level),
    date(r.occurred_at),
    shownText(r.shown),
    ...(r.adopted_by.length ? [`adopted by ${r.adopted_by.join(", ")}`] : []),
    ...(r.corrects.length ? [`corrects #${r.corrects.join(", #")}`] : []),
    ...(r.rule_id ? [`rule ${r.rule_id}`] : []),
  ].join(" · ");
  const lines = [head, `    ${r.text}`];
  if (r.quote && r.quote.marked !== r.text) lines.push(`    ${r.quote.marked}`);
  if (r.quote)
    lines.push(
      `    (words of utterance #${r.quote.utterance_id}, ${r.quote.origin}, chars ${r.quote.start}–${r.quote.end})`,
    );
  for (const s of r.sources)
    lines.push(
      `    source #${s.reference_id} · ${s.kind} · ${s.label} · ${s.verifiability}${s.uri ? ` ${s.uri}` : ""}${s.stance !== "supports" ? ` · ${s.stance}` : ""}${s.last_checked ? ` · checked ${date(s.last_checked)}` : ""}`,
    );
  if (r.cut) lines.push(`    … ${r.cut.chars} chars cut: ${r.cut.pointer}`);
  return lines;
}

function section(name: string, s: Section<ReadRecord>): string[] {
  const lines = [`── ${name} · ${s.total}`];
  for (const r of s.records) lines.push(...recordLines(r));
  if (s.omitted > 0)
    lines.push(
      `  … ${s.omitted} more not shown${s.pointers.length ? ` (${s.pointers.join(", ")})` : ""}; --all or --budget shows more`,
    );
  return lines;
}

/** The text of a `why` answer. */
export function renderWhy(r: WhyResult): string {
  switch (r.mode) {
    case "pending": {
      const lines = [
        `pending reasons (unstated) · ${r.records.length}${r.target ? ` · ${r.resolved?.qualified_name ?? r.target}` : ""}`,
      ];
      for (const p of r.records)
        lines.push(` #${p.id} · ${p.node_key ?? "(no node)"} · ${p.plan_id} · ${date(p.occurred_at)}`);
      return lines.join("\n");
    }
    case "never_read": {
      const lines = [`active constraints never shown · ${r.records.length}`];
      for (const c of r.records) lines.push(...recordLines(c));
      return lines.join("\n");
    }
    case "search": {
      const lines = [`search (LIKE, no full-text index) "${r.words}" · ${r.records.length}`];
      for (const c of r.records) lines.push(...recordLines(c));
      return lines.join("\n");
    }
    case "target": {
      if (!r.resolved || !r.read || !r.summary)
        return `nothing on record for ${r.target} in project ${r.project}`;
      const s = r.summary;
      const read = r.read;
      const lines = [
        `${r.resolved.qualified_name} · downstream ${s.downstream ?? "n/a"} · history ${s.history} · constraints ${s.constraints} (${s.active_constraints} active) · rejected ${s.rejected} · pending ${s.pending}`,
        `  [${r.resolved.node_key}] ${r.resolved.node_type} ${read.card ? `${read.card.file_path}:${read.card.line_start}-${read.card.line_end}` : ""}`,
        ...structureLines(read),
        `── history · ${s.history}`,
        ...read.identity.events.map(
          (e) => `  run ${e.run_id} · ${e.event_type}${e.detail ? ` · ${e.detail}` : ""}`,
        ),
        ...(read.identity.omitted ? [`  … ${read.identity.omitted} earlier events`] : []),
        ...section("constraints", read.constraints),
        ...section("rejected", read.rejected),
        ...section("reasons", read.reasons),
        `── prior claims · ${read.prior_claims.total}`,
        ...read.prior_claims.records.map(
          (c) => `  plan ${c.plan_id} · ${c.target}: ${c.claim} · outcome: none recorded`,
        ),
        ...(read.prior_claims.omitted ? [`  … ${read.prior_claims.omitted} more`] : []),
      ];
      return lines.join("\n");
    }
  }
}

/** The structure card: callers and callees at the newest run, names cut as counts. */
function structureLines(read: BoundedRead): string[] {
  const side = (label: string, x: BoundedRead["structure"]["callers"]) =>
    `  ${label} ${x.total}${x.names.length ? `: ${x.names.join(", ")}` : ""}${x.omitted ? ` (… ${x.omitted} more)` : ""}`;
  return [side("callers", read.structure.callers), side("callees", read.structure.callees)];
}

/** The text of `headline show`. */
export function renderHeadline(doc: HeadlineDoc): string {
  const s = doc.summary;
  const lines = [
    `headline #${doc.headline_id} · ${doc.plan_id} · ${doc.project} · ${date(doc.generated_at)}`,
    `targets ${s.targets} · findings ${s.findings} (blocking ${s.blocking}, warning ${s.warning}, info ${s.info}) · unanswered ${s.unanswered}${s.hard_unanswered ? ` (${s.hard_unanswered} hard)` : ""} · shown ${s.shown} · adopted ${s.adopted}`,
  ];
  for (const f of doc.findings) {
    lines.push(
      `${f.severity === "blocking" ? "!" : f.severity === "warning" ? "~" : "i"} ${f.id} · ${f.severity}${f.hard ? " · hard" : ""} · ${f.tier} · ${f.anchor}`,
    );
    lines.push(`    ${f.text}`);
    lines.push(
      f.response
        ? `    answered: ${f.response.action} by ${f.response.by}${f.response.rationale ? ` — ${f.response.rationale}` : ""} (response #${f.response.response_id})`
        : `    unanswered: ratchet headline respond ${doc.plan_id} ${f.id} --action revise|proceed [--rationale …] [--cite ID]`,
    );
  }
  for (const h of doc.hints) lines.push(`hint: ${h}`);
  return lines.join("\n");
}
