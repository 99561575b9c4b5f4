/**
 * The inspector's page for one task: a single self-contained HTML document
 * (inline CSS and inline SVG; no script, no font, no resource from anywhere)
 * showing the context size of every request the task sent as a chart, with
 * the compactions and offloads marked at the requests they first shaped,
 * the usage of every response, the summaries and artifacts the journal
 * records with their files, and the calls awaiting the host's approval.
 *
 * Guarantees:
 *
 * - the chart is plain SVG: it renders with scripts disabled, and the page
 *   forbids every script and every fetch by its Content-Security-Policy, so
 *   a text that escaped the escaping still could not run or call out;
 * - every text taken from the journal, the report or the file system (tool
 *   names, call ids, paths, operations, reasons) is HTML-escaped, in element
 *   content and in attributes alike;
 * - bodies (texts, tool inputs and results) appear only when the report was
 *   made with bodies shown; the journal itself holds none.
 *
 * The input is described structurally ({@link HtmlReport}, {@link HtmlJournal})
 * so this module does not import `Inspector` (which may re-export it): an
 * `Inspector.Report` and its `JournalReport`s are accepted as they are.
 *
 * @internal
 */
import * as Volume from "@tessera/core/Volume"
import * as History from "@tessera/runtime/History"
import type * as Journal from "@tessera/runtime/Journal"
import type * as JournalEntry from "@tessera/runtime/JournalEntry"
import type * as Model from "@tessera/runtime/Model"
import * as Option from "effect/Option"
import { redactionLine, redactionOf } from "./inspectRedaction.ts"
import { formatSize, formatUsage, partLines } from "./inspectText.ts"

/** A file on a volume as the inspector lists it (an `Inspector.VolumeFile`). */
export interface HtmlFile {
  readonly volume: string
  readonly path: string
  readonly size: number
}

/** The conversation of a task's last turn as the inspector rebuilt it (an `Inspector.Conversation`). */
export type HtmlConversation =
  | { readonly _tag: "Rebuilt"; readonly turn: number; readonly volume: string; readonly history: History.History }
  | { readonly _tag: "NotRecorded" | "Unreadable"; readonly detail: string }

/** One task's journal as the inspector read it (an `Inspector.JournalReport`). */
export interface HtmlJournal {
  readonly task: string
  readonly file: string
  readonly entries: ReadonlyArray<JournalEntry.Entry>
  readonly usage: JournalEntry.UsageTotal
  readonly resumable: {
    readonly lastTurn: Option.Option<Journal.TurnState>
    readonly awaitingApproval: ReadonlyArray<Journal.OwedCall>
    readonly conversation: HtmlConversation
  }
}

/** What the page needs of the whole report (an `Inspector.Report`). */
export interface HtmlReport {
  readonly root: string
  readonly store: string
  readonly summaries: ReadonlyArray<HtmlFile>
  readonly artifacts: ReadonlyArray<HtmlFile>
  readonly bodies: boolean
}

/** The colours of the chart's series and markers; the page's legend and its tests use the same ones. */
export const colors = {
  requestSize: "#2563eb",
  inputTokens: "#059669",
  compaction: "#9333ea",
  offload: "#ea580c"
} as const

/**
 * Text as HTML: safe in element content and in quoted attribute values
 * alike. Everything the page shows that it did not write itself goes
 * through here.
 */
const escapeHtml = (text: string): string =>
  text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;")

/** A count with thousands separated, the same on every machine (no locale). */
const count = (value: number): string => String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ",")

type Dispatched = JournalEntry.Entry & { readonly _tag: "RequestDispatched" }
type Staged = JournalEntry.Entry & { readonly _tag: "SummaryStaged" }
type Offloaded = JournalEntry.Entry & { readonly _tag: "ArtifactOffloaded" }

/** One point of the chart: a request, and the input tokens its provider reported for it, when it did. */
interface RequestPoint {
  readonly index: number
  readonly request: Dispatched
  readonly inputTokens: number | undefined
}

/**
 * A compaction or an offload, at the request it first shaped: the first
 * request dispatched after it in journal order (a summary staged for step
 * `s` shapes the request of step `s`; a result offloaded in step `s`, the
 * request of step `s + 1`). `index` equals the number of requests when no
 * request followed yet.
 */
type Marker =
  | { readonly kind: "compaction"; readonly index: number; readonly entry: Staged }
  | { readonly kind: "offload"; readonly index: number; readonly entry: Offloaded }

/** The requests of a journal in order, each with the usage of the response that answered it. */
const requestPoints = (entries: ReadonlyArray<JournalEntry.Entry>): ReadonlyArray<RequestPoint> => {
  const points: Array<RequestPoint> = []
  let open: Dispatched | undefined
  for (const entry of entries) {
    if (entry._tag === "RequestDispatched") {
      if (open !== undefined) points.push({ index: points.length, request: open, inputTokens: undefined })
      open = entry
    } else if (
      entry._tag === "ResponseReceived" &&
      open !== undefined &&
      entry.turn === open.turn &&
      entry.step === open.step
    ) {
      points.push({ index: points.length, request: open, inputTokens: entry.usage?.inputTokens })
      open = undefined
    }
  }
  if (open !== undefined) points.push({ index: points.length, request: open, inputTokens: undefined })
  return points
}

const markersOf = (entries: ReadonlyArray<JournalEntry.Entry>): ReadonlyArray<Marker> => {
  const markers: Array<Marker> = []
  let requests = 0
  for (const entry of entries) {
    if (entry._tag === "RequestDispatched") requests++
    else if (entry._tag === "SummaryStaged") markers.push({ kind: "compaction", index: requests, entry })
    else if (entry._tag === "ArtifactOffloaded") markers.push({ kind: "offload", index: requests, entry })
  }
  return markers
}

/** The smallest of 1, 2, 5 times a power of ten at or above `value` (at least 1), for an axis's top. */
const niceCeiling = (value: number): number => {
  if (value <= 1) return 1
  const power = 10 ** Math.floor(Math.log10(value))
  const step = [1, 2, 5, 10].find((factor) => factor * power >= value) ?? 10
  return step * power
}

const chart = {
  width: 960,
  height: 380,
  left: 80,
  right: 80,
  top: 24,
  bottom: 56
} as const

const fixed = (value: number): string => value.toFixed(1)

const requestLabel = (request: Dispatched): string => `turn ${request.turn} step ${request.step}`

const markerTitle = (marker: Marker): string => {
  const at = marker.entry.turn === undefined ? "" : ` (turn ${marker.entry.turn}, step ${marker.entry.step ?? "?"})`
  const place = marker.entry.volume === undefined ? "" : `${Volume.formatVolumeRef(marker.entry.volume)}:`
  return marker.kind === "compaction"
    ? `compaction ${marker.entry.operation}${at}: summary ${place}${marker.entry.path}, ${formatSize(marker.entry.size)}`
    : `offload${at}: ${place}${marker.entry.path}, ${formatSize(marker.entry.size)}`
}

const markerShape = (marker: Marker, cx: number, cy: number): string =>
  marker.kind === "offload"
    ? `<path d="M${fixed(cx - 8)} ${fixed(cy - 7)}H${fixed(cx + 8)}L${fixed(cx)} ${fixed(cy + 8)}Z" fill="${colors.offload}"/>`
    : `<path d="M${fixed(cx)} ${fixed(cy - 9)}L${fixed(cx + 9)} ${fixed(cy)}L${fixed(cx)} ${fixed(cy + 9)}L${fixed(cx - 9)} ${fixed(cy)}Z" fill="${colors.compaction}"/>`

/** The chart of context size per request, as inline SVG. */
const chartSvg = (points: ReadonlyArray<RequestPoint>, markers: ReadonlyArray<Marker>): string => {
  if (points.length === 0 && markers.length === 0) {
    return `<p class="empty" id="chart-empty">No request was dispatched yet.</p>`
  }
  const trailing = markers.some((marker) => marker.index >= points.length)
  const slots = Math.max(1, points.length + (trailing ? 1 : 0))
  const plotWidth = chart.width - chart.left - chart.right
  const plotHeight = chart.height - chart.top - chart.bottom
  const bottom = chart.top + plotHeight
  const x = (index: number) => chart.left + ((index + 0.5) * plotWidth) / slots
  const sizeTop = niceCeiling(Math.max(0, ...points.map((point) => point.request.size)))
  const tokens = points.flatMap((point) => (point.inputTokens === undefined ? [] : [point]))
  const tokenTop = niceCeiling(Math.max(0, ...tokens.map((point) => point.inputTokens ?? 0)))
  const ySize = (size: number) => bottom - (size / sizeTop) * plotHeight
  const yTokens = (value: number) => bottom - (value / tokenTop) * plotHeight
  const ticks = [0, 0.25, 0.5, 0.75, 1]
  const out: Array<string> = []
  out.push(
    `<svg id="context-chart" xmlns="http://www.w3.org/2000/svg" width="${chart.width}" height="${chart.height}" viewBox="0 0 ${chart.width} ${chart.height}" role="img" aria-labelledby="chart-title">`,
    `<title id="chart-title">Context size per request${tokens.length > 0 ? " and provider input tokens" : ""}</title>`,
    `<rect id="plot-area" x="${chart.left}" y="${chart.top}" width="${plotWidth}" height="${plotHeight}" fill="#ffffff" stroke="#d1d5db"/>`
  )
  for (const tick of ticks) {
    const y = fixed(bottom - tick * plotHeight)
    out.push(
      `<line x1="${chart.left}" x2="${chart.left + plotWidth}" y1="${y}" y2="${y}" stroke="#e5e7eb"/>`,
      `<text class="axis" x="${chart.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${count(Math.round(tick * sizeTop))}</text>`
    )
    if (tokens.length > 0) {
      out.push(
        `<text class="axis" x="${chart.left + plotWidth + 6}" y="${y}" dominant-baseline="middle">${count(Math.round(tick * tokenTop))}</text>`
      )
    }
  }
  out.push(
    `<text class="axis-title" transform="translate(16 ${fixed(chart.top + plotHeight / 2)}) rotate(-90)" text-anchor="middle">request size (bytes)</text>`
  )
  if (tokens.length > 0) {
    out.push(
      `<text class="axis-title" transform="translate(${chart.width - 14} ${fixed(chart.top + plotHeight / 2)}) rotate(90)" text-anchor="middle">input tokens (provider)</text>`
    )
  }
  for (const point of points) {
    out.push(
      `<text class="axis" x="${fixed(x(point.index))}" y="${bottom + 16}" text-anchor="middle">${point.index + 1}</text>`
    )
  }
  if (trailing) {
    out.push(`<text class="axis" x="${fixed(x(points.length))}" y="${bottom + 16}" text-anchor="middle">next</text>`)
  }
  out.push(
    `<text class="axis-title" x="${fixed(chart.left + plotWidth / 2)}" y="${chart.height - 10}" text-anchor="middle">request, in the order sent</text>`
  )

  // Markers first, so the series are drawn over their guide lines.
  const stacked = new Map<number, number>()
  for (const [order, marker] of markers.entries()) {
    const level = stacked.get(marker.index) ?? 0
    stacked.set(marker.index, level + 1)
    const cx = x(marker.index)
    const cy = chart.top + 14 + level * 20
    out.push(
      `<g class="marker marker-${marker.kind}" data-kind="${marker.kind}" data-request="${marker.index}" data-seq="${marker.entry.seq}" data-order="${order}" data-path="${escapeHtml(marker.entry.path)}">`,
      `<title>${escapeHtml(markerTitle(marker))}</title>`,
      `<line x1="${fixed(cx)}" x2="${fixed(cx)}" y1="${chart.top}" y2="${bottom}" stroke="${colors[marker.kind]}" stroke-width="1.5" stroke-dasharray="5 4"/>`,
      markerShape(marker, cx, cy),
      `</g>`
    )
  }

  if (points.length > 1) {
    out.push(
      `<polyline class="series series-request-size" fill="none" stroke="${colors.requestSize}" stroke-width="2" points="${points.map((point) => `${fixed(x(point.index))},${fixed(ySize(point.request.size))}`).join(" ")}"/>`
    )
  }
  if (tokens.length > 1) {
    out.push(
      `<polyline class="series series-input-tokens" fill="none" stroke="${colors.inputTokens}" stroke-width="2" stroke-dasharray="6 3" points="${tokens.map((point) => `${fixed(x(point.index))},${fixed(yTokens(point.inputTokens ?? 0))}`).join(" ")}"/>`
    )
  }
  for (const point of points) {
    const request = point.request
    const when = new Date(request.at).toISOString()
    out.push(
      `<circle class="point point-request" cx="${fixed(x(point.index))}" cy="${fixed(ySize(request.size))}" r="6" fill="${colors.requestSize}" data-index="${point.index}" data-seq="${request.seq}" data-turn="${request.turn}" data-step="${request.step}" data-size="${request.size}" data-parts="${request.parts}"><title>request ${point.index + 1} (${requestLabel(request)}, ${when}): ${count(request.size)} bytes in ${request.parts} parts</title></circle>`
    )
    if (point.inputTokens !== undefined) {
      const cx = x(point.index)
      const cy = yTokens(point.inputTokens)
      out.push(
        `<rect class="point point-tokens" x="${fixed(cx - 5)}" y="${fixed(cy - 5)}" width="10" height="10" fill="${colors.inputTokens}" data-index="${point.index}" data-tokens="${point.inputTokens}"><title>request ${point.index + 1} (${requestLabel(request)}): ${count(point.inputTokens)} input tokens reported</title></rect>`
      )
    }
  }
  out.push(`</svg>`)
  return out.join("\n")
}

const swatch = (shape: string): string =>
  `<svg class="swatch" xmlns="http://www.w3.org/2000/svg" width="22" height="18" viewBox="0 0 22 18" aria-hidden="true">${shape}</svg>`

const legend = (tokens: boolean): string =>
  [
    `<ul class="legend" id="chart-legend">`,
    `<li data-series="request-size">${swatch(`<line x1="1" x2="21" y1="9" y2="9" stroke="${colors.requestSize}" stroke-width="2"/><circle cx="11" cy="9" r="5" fill="${colors.requestSize}"/>`)} request size in bytes (as journaled: the request's parts and tools)</li>`,
    ...(tokens
      ? [
          `<li data-series="input-tokens">${swatch(`<line x1="1" x2="21" y1="9" y2="9" stroke="${colors.inputTokens}" stroke-width="2" stroke-dasharray="6 3"/><rect x="6" y="4" width="10" height="10" fill="${colors.inputTokens}"/>`)} input tokens the provider reported for the request</li>`
        ]
      : []),
    `<li data-series="compaction">${swatch(`<path d="M11 1L19 9L11 17L3 9Z" fill="${colors.compaction}"/>`)} compaction: a summary staged, at the first request it shaped</li>`,
    `<li data-series="offload">${swatch(`<path d="M3 2H19L11 16Z" fill="${colors.offload}"/>`)} offload: a tool result written to a file, at the first request that carried its pointer</li>`,
    `</ul>`
  ].join("\n")

const cell = (value: number | undefined): string =>
  value === undefined ? `<td class="num none">–</td>` : `<td class="num">${count(value)}</td>`

const usageTable = (journal: HtmlJournal): string => {
  const rows: Array<string> = []
  for (const entry of journal.entries) {
    if (entry._tag !== "ResponseReceived" && entry._tag !== "SummaryRequestAnswered") continue
    const kind = entry._tag === "ResponseReceived" ? "step" : "summary"
    const what =
      entry._tag === "ResponseReceived"
        ? `response${entry.toolCalls.length === 0 ? "" : `, calls ${entry.toolCalls.map((call) => `${call.callId} ${call.name}`).join(", ")}`}`
        : `summary ${entry.operation} piece ${entry.piece}/${entry.pieces}`
    const usage: Partial<Model.Usage> = entry.usage ?? {}
    rows.push(
      `<tr class="usage-row" data-kind="${kind}" data-seq="${entry.seq}" data-turn="${entry.turn ?? ""}" data-step="${entry.step ?? ""}" data-input="${usage.inputTokens ?? ""}" data-output="${usage.outputTokens ?? ""}">` +
        `<td class="num">${entry.turn ?? "–"}</td><td class="num">${entry.step ?? "–"}</td><td>${escapeHtml(what)}</td>` +
        `${cell(usage.inputTokens)}${cell(usage.outputTokens)}${cell(usage.cachedInputTokens)}${cell(usage.reasoningTokens)}` +
        `<td>${escapeHtml(entry.finishReason ?? "–")}</td></tr>`
    )
  }
  const total = journal.usage
  return [
    `<table id="usage-table">`,
    `<thead><tr><th>turn</th><th>step</th><th>response</th><th>input tokens</th><th>output tokens</th><th>cached input</th><th>reasoning</th><th>finish</th></tr></thead>`,
    `<tbody>`,
    rows.length === 0 ? `<tr><td colspan="8" class="empty">No response recorded.</td></tr>` : rows.join("\n"),
    `</tbody>`,
    `<tfoot><tr id="usage-total"><td colspan="3">total (${total.reported} of ${total.responses} responses reported usage)</td>${cell(total.usage.inputTokens)}${cell(total.usage.outputTokens)}${cell(total.usage.cachedInputTokens)}${cell(total.usage.reasoningTokens)}<td></td></tr></tfoot>`,
    `</table>`
  ].join("\n")
}

const fileKey = (volume: string, path: string): string => `${volume}\u0000${path}`

/** The summaries or artifacts the journal records, each beside its file as the report lists it. */
const filesTable = (
  id: string,
  kind: "summary" | "artifact",
  markers: ReadonlyArray<Marker>,
  files: ReadonlyArray<HtmlFile>,
  requests: number
): string => {
  const listed = new Map(files.map((file) => [fileKey(file.volume, file.path), file]))
  const rows = markers.map((marker) => {
    const entry = marker.entry
    const file = entry.volume === undefined ? undefined : listed.get(fileKey(entry.volume.volume, entry.path))
    const place = entry.volume === undefined ? "(no volume)" : Volume.formatVolumeRef(entry.volume)
    const at = marker.index < requests ? `request ${marker.index + 1}` : "after the last request"
    return (
      `<tr class="file-row" data-kind="${kind}" data-seq="${entry.seq}" data-path="${escapeHtml(entry.path)}" data-request="${marker.index}">` +
      `<td class="num">${entry.turn ?? "–"}</td><td class="num">${entry.step ?? "–"}</td><td>${escapeHtml(at)}</td>` +
      `<td><code>${escapeHtml(place)}:${escapeHtml(entry.path)}</code></td><td class="num">${escapeHtml(formatSize(entry.size))}</td>` +
      `<td>${file === undefined ? `<span class="missing">not on disk</span>` : escapeHtml(formatSize(file.size))}</td></tr>`
    )
  })
  return [
    `<table id="${id}">`,
    `<thead><tr><th>turn</th><th>step</th><th>first shaped</th><th>file</th><th>size journaled</th><th>file on disk</th></tr></thead>`,
    `<tbody>`,
    rows.length === 0 ? `<tr><td colspan="6" class="empty">None.</td></tr>` : rows.join("\n"),
    `</tbody>`,
    `</table>`
  ].join("\n")
}

const approvalsTable = (calls: ReadonlyArray<Journal.OwedCall>): string =>
  [
    `<table id="approvals-table">`,
    `<thead><tr><th>call</th><th>tool</th><th>why</th><th>requested at entry</th></tr></thead>`,
    `<tbody>`,
    calls.length === 0
      ? `<tr><td colspan="4" class="empty">No call awaits approval.</td></tr>`
      : calls
          .map(
            (call) =>
              `<tr class="approval-row" data-call="${escapeHtml(call.callId)}"><td><code>${escapeHtml(call.callId)}</code></td><td><code>${escapeHtml(call.name)}</code></td><td>${escapeHtml(call.approval?.reason ?? "–")}</td><td class="num">${call.approval === undefined ? "–" : `#${call.approval.requestedSeq}`}</td></tr>`
          )
          .join("\n"),
    `</tbody>`,
    `</table>`
  ].join("\n")

const turnLine = (journal: HtmlJournal): string =>
  Option.match(journal.resumable.lastTurn, {
    onNone: () => "no turn yet",
    onSome: (turn) =>
      turn.status === "Open"
        ? `turn ${turn.turn} open at step ${turn.steps}`
        : `turn ${turn.turn} ${turn.status.toLowerCase()} after ${turn.steps} step${turn.steps === 1 ? "" : "s"}`
  })

/** The conversation as the model last saw it, one line per part; bodies only when `bodies` is true. */
const conversationSection = (conversation: HtmlConversation, bodies: boolean): string => {
  if (conversation._tag !== "Rebuilt") {
    return `<p id="conversation" class="empty">${conversation._tag === "NotRecorded" ? "Not recorded" : "Unreadable"}: ${escapeHtml(conversation.detail)}</p>`
  }
  const parts = History.toParts(conversation.history)
  const summaryParts = new Set<Model.Part>(conversation.history.summary?.parts ?? [])
  const lines = parts.flatMap((part, index) => partLines(index + 1, part, summaryParts.has(part), bodies))
  return [
    `<p>Turn ${conversation.turn}, ${parts.length} parts, transcript on <code>${escapeHtml(conversation.volume)}</code>${bodies ? "" : "; bodies hidden (the inspector's --bodies shows them)"}.</p>`,
    `<pre id="conversation">${escapeHtml(lines.join("\n"))}</pre>`
  ].join("\n")
}

const style = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #111827; background: #f9fafb; margin: 24px; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 8px; }
.meta { color: #4b5563; margin: 0; }
section { background: #ffffff; border: 1px solid #e5e7eb; border-radius: 6px; padding: 12px 16px; margin-top: 16px; }
table { border-collapse: collapse; width: 100%; }
th, td { border-bottom: 1px solid #e5e7eb; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f3f4f6; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tfoot td { font-weight: 600; }
.none, .empty { color: #6b7280; }
.missing { color: #b91c1c; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
svg text { font: 11px system-ui, sans-serif; fill: #374151; }
svg text.axis-title { font-size: 12px; fill: #111827; }
.legend { list-style: none; padding: 0; margin: 8px 0 0; display: flex; flex-wrap: wrap; gap: 6px 20px; }
.legend li { display: flex; align-items: center; gap: 6px; }
`

/**
 * One self-contained HTML page for one task of a report: the chart of
 * context size per request with compactions and offloads marked, the usage
 * per response, the summaries and artifacts its journal records (each with
 * its file as the report lists it, or "not on disk"), the calls awaiting
 * approval and the conversation as the model last saw it (bodies only when
 * `report.bodies`). Pure: the same report gives the same page.
 */
export const renderHtml = (report: HtmlReport, journal: HtmlJournal): string => {
  const points = requestPoints(journal.entries)
  const markers = markersOf(journal.entries)
  const compactions = markers.filter((marker) => marker.kind === "compaction")
  const offloads = markers.filter((marker) => marker.kind === "offload")
  const tokens = points.some((point) => point.inputTokens !== undefined)
  const title = `Task ${journal.task}: store ${report.store}`
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${style}</style>
</head>
<body>
<header>
<h1>Task <code id="task">${escapeHtml(journal.task)}</code></h1>
<p class="meta">store <code>${escapeHtml(report.store)}</code> at <code>${escapeHtml(report.root)}</code>; journal <code>${escapeHtml(journal.file)}</code> (${journal.entries.length} entries); ${escapeHtml(turnLine(journal))}; tokens ${escapeHtml(formatUsage(journal.usage.usage))}</p>
<p class="meta" id="redaction">${escapeHtml(redactionLine(redactionOf(journal.entries)))}</p>
</header>
<section id="context">
<h2>Context size per request</h2>
<p class="meta">${points.length} request${points.length === 1 ? "" : "s"}, ${compactions.length} compaction${compactions.length === 1 ? "" : "s"}, ${offloads.length} offload${offloads.length === 1 ? "" : "s"}</p>
${chartSvg(points, markers)}
${legend(tokens)}
</section>
<section id="usage">
<h2>Usage per step</h2>
${usageTable(journal)}
</section>
<section id="summaries">
<h2>Summaries</h2>
${filesTable("summaries-table", "summary", compactions, report.summaries, points.length)}
</section>
<section id="artifacts">
<h2>Artifacts</h2>
${filesTable("artifacts-table", "artifact", offloads, report.artifacts, points.length)}
</section>
<section id="approvals">
<h2>Awaiting approval</h2>
${approvalsTable(journal.resumable.awaitingApproval)}
</section>
<section id="conversation-section">
<h2>Conversation as the model last saw it</h2>
${conversationSection(journal.resumable.conversation, report.bodies)}
</section>
</body>
</html>
`
}
