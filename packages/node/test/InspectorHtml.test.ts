/**
 * The inspector's HTML page for a task, checked in real headless Chromium on
 * a folder written by a real durable turn: the chart has one point per
 * request at its journaled size, a marker for every compaction and offload
 * at the request it first shaped, and a legend; the usage table has a row
 * per response; the summaries, artifacts and pending approvals are listed;
 * the page renders with scripts disabled, fetches nothing, escapes every
 * journal text, and shows bodies only when asked. Screenshots are kept in
 * the test's temporary folder, never committed.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { Inspector, LocalHarness } from "@tessera/node"
import { Compaction, type JournalEntry, Model, TaskExecution, Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Schema } from "effect"
import type { Browser, Page } from "playwright"
import { colors, renderHtml } from "../src/internal/inspectHtml.js"
import { browser, chromiumMissing, colorCounts, newPage, pngSize } from "./support/chromium.ts"
import { agentId, nodeLayer, taskId, tempDir } from "./support/temp.ts"
import { isSummaryRequest, produce, produceCall, start, taskText } from "./support/turns.ts"

const agent = agentId("researcher")
const task = taskId("task-1")
const summaryText = "Report A was offloaded; report B is all 'b'."

const deploy = Tool.make({
  name: "deploy",
  description: "Deploys a release",
  input: Schema.Struct({ target: Schema.String }),
  needsApproval: true,
  handler: (input) => Effect.succeed(`deployed to ${input.target}`)
})

/**
 * A folder written by one real durable turn that offloads two large results
 * (steps 1 and 3), compacts twice (before the requests of steps 3 and 4),
 * and ends its fourth step awaiting approval of a `deploy` call. Every
 * response reports usage, its input tokens a quarter of the request's parts.
 */
const populated = (stateDir: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const harness = yield* LocalHarness.open({ stateDir, namespace: "project-a", agent })
      let calls = 0
      const usageOf = (request: Model.ModelRequest) => ({
        inputTokens: Math.ceil(JSON.stringify(request.parts).length / 4),
        outputTokens: 40 + calls
      })
      const script: ScriptedModel.Script = (request) => {
        if (isSummaryRequest(request)) return Model.response({ text: summaryText, usage: usageOf(request) })
        calls++
        const usage = usageOf(request)
        return calls === 1
          ? Model.response({ toolCalls: [produceCall("c1", 20_000, "a")], usage })
          : calls === 2
            ? Model.response({ toolCalls: [produceCall("c2", 12_000, "b")], usage })
            : calls === 3
              ? Model.response({ toolCalls: [produceCall("c3", 18_000, "c")], usage })
              : Model.response({
                  text: "Shipping.",
                  toolCalls: [Model.toolCall("c4", "deploy", { target: "staging" })],
                  usage
                })
      }
      const outcome = yield* harness
        .withTask(
          task,
          (binding) =>
            TaskExecution.runTurn(binding, start, {
              tools: Tool.registry(produce, deploy),
              maxSteps: 8,
              durable: true,
              offload: { threshold: 15_000, readTool: "read_artifact", destination: "Private" }
            }),
          { policy: Compaction.threshold({ measure: "bytes", limit: 10_000, keepRecent: 0, pieceLimit: 100_000 }) }
        )
        .pipe(Effect.provide(ScriptedModel.layer(script)))
      assert.strictEqual(outcome._tag, "AwaitingApproval")
      return harness.folder
    })
  )

type Dispatched = JournalEntry.Entry & { readonly _tag: "RequestDispatched" }

const requestsOf = (journal: Inspector.JournalReport): ReadonlyArray<Dispatched> =>
  journal.entries.filter((entry): entry is Dispatched => entry._tag === "RequestDispatched")

/**
 * Where the journal says each marker belongs, by steps rather than by the
 * renderer's entry order: a summary staged for step `s` shapes the request
 * of step `s`; a result offloaded in step `s` first travels in the request
 * of step `s + 1`. Zero-based request indexes.
 */
const expectedMarkers = (journal: Inspector.JournalReport, kind: "SummaryStaged" | "ArtifactOffloaded") => {
  const requests = requestsOf(journal)
  return journal.entries.flatMap((entry) => {
    if (entry._tag !== kind) return []
    const step = (entry.step ?? 0) + (kind === "ArtifactOffloaded" ? 1 : 0)
    return [requests.findIndex((request) => request.turn === entry.turn && request.step === step)]
  })
}

const writePage = (dir: string, name: string, html: string): string => {
  const file = path.join(dir, name)
  fs.writeFileSync(file, html)
  return pathToFileURL(file).href
}

const open = (launched: Browser, url: string, javaScriptEnabled: boolean) =>
  Effect.flatMap(newPage(launched, { javaScriptEnabled, viewport: { width: 1280, height: 900 } }), (page: Page) => {
    const fetched: Array<string> = []
    page.on("request", (request) => fetched.push(request.url()))
    return Effect.as(
      Effect.promise(() => page.goto(url)),
      { page, fetched }
    )
  })

const markersIn = (page: Page, kind: "compaction" | "offload") =>
  Effect.promise(() =>
    page
      .locator(`#context-chart g.marker-${kind}`)
      .evaluateAll((elements) => elements.map((element) => Number(element.getAttribute("data-request"))))
  )

/** The plot area's pixels, the legend left out, so a colour found there is the chart's. */
const plotPixels = (launched: Browser, page: Page) =>
  Effect.gen(function* () {
    const box = yield* Effect.promise(() => page.locator("#plot-area").boundingBox())
    assert.isNotNull(box)
    if (box === null) return {}
    const png = yield* Effect.promise(() => page.screenshot({ clip: box }))
    return yield* colorCounts(launched, png, colors)
  })

describe.skipIf(chromiumMissing !== undefined)("the inspector's HTML page in headless Chromium", () => {
  it.live(
    "html_chart_in_chromium: with scripts off and nothing fetched, one point per request at its size, compactions and offloads marked at the requests they first shaped, a legend, the usage rows, summaries, artifacts and approvals; a full-page screenshot is a sensible PNG with the series and markers painted",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const folder = yield* populated(path.join(dir, "state"))
        const report = yield* Inspector.inspect(folder)
        const journal = report.journals[0]
        assert.isDefined(journal)
        if (journal === undefined) return
        const launched = yield* browser
        // Scripts off: the chart is plain SVG and must not need any.
        const { fetched, page } = yield* open(
          launched,
          writePage(dir, "task-1.html", renderHtml(report, journal)),
          false
        )
        assert.deepStrictEqual(fetched, [page.url()], "the page fetches nothing but itself")

        const requests = requestsOf(journal)
        assert.strictEqual(requests.length, 4)
        const points = yield* Effect.promise(() =>
          page.locator("#context-chart circle.point-request").evaluateAll((elements) =>
            elements.map((element) => {
              const box = element.getBoundingClientRect()
              return {
                seq: Number(element.getAttribute("data-seq")),
                size: Number(element.getAttribute("data-size")),
                x: box.x + box.width / 2,
                y: box.y + box.height / 2
              }
            })
          )
        )
        assert.deepStrictEqual(
          points.map(({ seq, size }) => [seq, size]),
          requests.map((request) => [request.seq, request.size]),
          "one point per request, in order, at its journaled size"
        )
        for (const [a, one] of points.entries()) {
          for (const [b, other] of points.entries()) {
            if (a < b) assert.isTrue(one.x < other.x, "requests run left to right in the order sent")
            if (one.size > other.size) assert.isTrue(one.y < other.y, "a larger request is drawn higher")
          }
        }
        const plot = yield* Effect.promise(() => page.locator("#plot-area").boundingBox())
        assert.isNotNull(plot)
        for (const point of points) {
          assert.isTrue(
            plot !== null &&
              point.x > plot.x &&
              point.x < plot.x + plot.width &&
              point.y >= plot.y &&
              point.y <= plot.y + plot.height,
            "every point lies inside the plot"
          )
        }
        const reported = journal.entries.flatMap((entry) =>
          entry._tag === "ResponseReceived" && entry.usage?.inputTokens !== undefined ? [entry.usage.inputTokens] : []
        )
        const tokenPoints = yield* Effect.promise(() =>
          page
            .locator("#context-chart rect.point-tokens")
            .evaluateAll((elements) => elements.map((element) => Number(element.getAttribute("data-tokens"))))
        )
        assert.deepStrictEqual(tokenPoints, reported, "one token point per response that reported input tokens")

        const compactions = yield* markersIn(page, "compaction")
        const offloads = yield* markersIn(page, "offload")
        assert.deepStrictEqual(compactions, expectedMarkers(journal, "SummaryStaged"))
        assert.deepStrictEqual(offloads, expectedMarkers(journal, "ArtifactOffloaded"))
        assert.deepStrictEqual(
          [compactions, offloads],
          [
            [2, 3],
            [1, 3]
          ]
        )
        // Each marker's guide line stands on its request's point.
        const lines = yield* Effect.promise(() =>
          page.locator("#context-chart g.marker line").evaluateAll((elements) =>
            elements.map((element) => {
              const box = element.getBoundingClientRect()
              return {
                request: Number(element.parentElement?.getAttribute("data-request")),
                x: box.x + box.width / 2
              }
            })
          )
        )
        assert.strictEqual(lines.length, 4)
        for (const line of lines) assert.approximately(line.x, points[line.request]?.x ?? -1, 1)
        const legend = yield* Effect.promise(() =>
          page
            .locator("#chart-legend li")
            .evaluateAll((elements) => elements.map((element) => element.getAttribute("data-series")))
        )
        assert.deepStrictEqual(legend, ["request-size", "input-tokens", "compaction", "offload"])

        const usageRows = yield* Effect.promise(() =>
          page.locator("#usage-table tbody tr.usage-row").evaluateAll((rows) =>
            rows.map((row) => {
              const cells = Array.from(row.querySelectorAll("td"), (cell) => cell.textContent ?? "")
              return [row.getAttribute("data-kind"), cells[0], cells[1], cells[3], cells[4]]
            })
          )
        )
        const responses = journal.entries.flatMap((entry) =>
          entry._tag === "ResponseReceived" || entry._tag === "SummaryRequestAnswered"
            ? [
                [
                  entry._tag === "ResponseReceived" ? "step" : "summary",
                  String(entry.turn),
                  String(entry.step),
                  String(entry.usage?.inputTokens).replace(/\B(?=(\d{3})+(?!\d))/g, ","),
                  String(entry.usage?.outputTokens)
                ]
              ]
            : []
        )
        assert.strictEqual(responses.length, 6, "four steps and two summary requests")
        assert.deepStrictEqual(usageRows, responses)
        const total = (yield* Effect.promise(() => page.locator("#usage-total").textContent())) ?? ""
        assert.include(total, `${journal.usage.reported} of ${journal.usage.responses} responses`)

        const fileRows = (table: string) =>
          Effect.promise(() =>
            page
              .locator(`#${table} tbody tr.file-row`)
              .evaluateAll((rows) =>
                rows.map((row) => [row.getAttribute("data-path"), row.querySelector("td:last-child")?.textContent])
              )
          )
        const sizeText = (bytes: number) => Inspector.formatSize(bytes)
        assert.deepStrictEqual(
          yield* fileRows("summaries-table"),
          report.summaries.map((file) => [file.path, sizeText(file.size)])
        )
        assert.deepStrictEqual(
          yield* fileRows("artifacts-table"),
          report.artifacts.map((file) => [file.path, sizeText(file.size)])
        )
        assert.strictEqual(report.artifacts.length, 2)
        const approvals = yield* Effect.promise(() =>
          page
            .locator("#approvals-table tr.approval-row")
            .evaluateAll((rows) =>
              rows.map((row) => Array.from(row.querySelectorAll("td"), (cell) => cell.textContent ?? ""))
            )
        )
        assert.deepStrictEqual(
          approvals,
          journal.resumable.awaitingApproval.map((call) => [
            call.callId,
            call.name,
            "Tool",
            `#${call.approval?.requestedSeq}`
          ])
        )
        assert.deepStrictEqual(
          approvals.map((row) => row.slice(0, 2)),
          [["c4", "deploy"]]
        )

        const shot = yield* Effect.promise(() => page.screenshot({ fullPage: true }))
        fs.writeFileSync(path.join(dir, "task-1.png"), shot)
        const size = pngSize(shot)
        assert.strictEqual(size.width, 1280)
        assert.isTrue(size.height >= 900 && size.height <= 20_000, `height ${size.height}`)
        const painted = yield* plotPixels(launched, page)
        for (const name of Object.keys(colors)) {
          assert.isTrue((painted[name] ?? 0) > 20, `${name} is painted in the plot: ${JSON.stringify(painted)}`)
        }

        // Self-contained: nothing in the page names a resource; control: a stylesheet link (the CSP taken out,
        // since it would block the fetch) is fetched, so the request check above can fail.
        const html = renderHtml(report, journal)
        assert.notMatch(html, /<script|\ssrc=|\shref=|url\(|@import/i)
        const linked = yield* open(
          launched,
          writePage(
            dir,
            "task-1-linked.html",
            html
              .replace(/<meta http-equiv="Content-Security-Policy"[^>]*>/, "")
              .replace("</head>", `<link rel="stylesheet" href="missing.css">\n</head>`)
          ),
          false
        )
        assert.deepStrictEqual(linked.fetched, [linked.page.url(), new URL("missing.css", linked.page.url()).href])

        // Negative control: the same report with its offloads removed shows no offload marker, so the checks
        // above can fail, in the DOM and in the pixels alike.
        const withoutOffloads: Inspector.JournalReport = {
          ...journal,
          entries: journal.entries.filter((entry) => entry._tag !== "ArtifactOffloaded")
        }
        const control = yield* open(
          launched,
          writePage(dir, "task-1-no-offloads.html", renderHtml(report, withoutOffloads)),
          false
        )
        const controlOffloads = yield* markersIn(control.page, "offload")
        assert.deepStrictEqual(controlOffloads, [])
        assert.notDeepEqual(controlOffloads, expectedMarkers(journal, "ArtifactOffloaded"))
        assert.deepStrictEqual(yield* markersIn(control.page, "compaction"), compactions)
        const controlPixels = yield* plotPixels(launched, control.page)
        assert.strictEqual(controlPixels.offload, 0, "no offload colour in the plot without offloads")
        assert.isTrue((controlPixels.compaction ?? 0) > 20)
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "html_escapes_journal_text: a tool name, a call id, a task and paths holding markup render as text and inject no element; controls: the same page unescaped injects every element, and without its CSP the injected script runs",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const folder = yield* populated(path.join(dir, "state"))
        const report = yield* Inspector.inspect(folder)
        const journal = report.journals[0]
        assert.isDefined(journal)
        if (journal === undefined) return
        const payloads = {
          tool: `deploy<script id="pwn-script">document.title = "pwned"</script>`,
          call: `<img id="pwn-img" src="data:," onerror="document.title='pwned'">`,
          summary: `summaries/<b id="pwn-b">bold</b>.txt`,
          artifact: `x" id="pwn-attr" onmouseover="document.title='pwned'`,
          task: `<svg id="pwn-svg"></svg>`
        }
        const hostile: Inspector.JournalReport = {
          ...journal,
          task: payloads.task as typeof journal.task,
          entries: journal.entries.map((entry) =>
            entry._tag === "ResponseReceived"
              ? { ...entry, toolCalls: entry.toolCalls.map((call) => ({ callId: payloads.call, name: call.name })) }
              : entry._tag === "SummaryStaged"
                ? { ...entry, path: payloads.summary }
                : entry._tag === "ArtifactOffloaded"
                  ? { ...entry, path: payloads.artifact }
                  : entry
          ),
          resumable: {
            ...journal.resumable,
            awaitingApproval: journal.resumable.awaitingApproval.map((call) => ({ ...call, name: payloads.tool }))
          }
        }
        const html = renderHtml(report, hostile)
        const injected = (page: Page) =>
          Effect.promise(() =>
            page.evaluate(() =>
              ["#pwn-script", "#pwn-img", "#pwn-b", "#pwn-attr", "#pwn-svg", "[onmouseover]", "[onerror]"].filter(
                (selector) => document.querySelector(selector) !== null
              )
            )
          )
        const titleOf = (page: Page) => Effect.promise(() => page.title())
        const launched = yield* browser

        // Scripts on, so that anything injected would run.
        const escaped = yield* open(launched, writePage(dir, "hostile.html", html), true)
        assert.deepStrictEqual(yield* injected(escaped.page), [])
        assert.notStrictEqual(yield* titleOf(escaped.page), "pwned")
        const text = (yield* Effect.promise(() => escaped.page.locator("body").textContent())) ?? ""
        for (const payload of Object.values(payloads)) assert.include(text, payload, "shown as text")
        assert.strictEqual(
          yield* Effect.promise(() =>
            escaped.page.locator("#approvals-table tr.approval-row td:nth-child(2)").textContent()
          ),
          payloads.tool
        )

        // Control: the same page with its escaping undone injects every element, so the check above can fail.
        const unescaped = html
          .replaceAll("&lt;", "<")
          .replaceAll("&gt;", ">")
          .replaceAll("&quot;", '"')
          .replaceAll("&#39;", "'")
          .replaceAll("&amp;", "&")
        const broken = yield* open(launched, writePage(dir, "hostile-unescaped.html", unescaped), true)
        assert.deepStrictEqual(yield* injected(broken.page), [
          "#pwn-script",
          "#pwn-img",
          "#pwn-b",
          "#pwn-attr",
          "#pwn-svg",
          "[onmouseover]",
          "[onerror]"
        ])
        // The page's CSP still keeps the injected script from running ...
        assert.notStrictEqual(yield* titleOf(broken.page), "pwned")
        // ... and without it the script runs, so the title check can fail.
        const csp = /<meta http-equiv="Content-Security-Policy"[^>]*>/
        assert.match(unescaped, csp)
        const bare = yield* open(launched, writePage(dir, "hostile-no-csp.html", unescaped.replace(csp, "")), true)
        assert.strictEqual(yield* titleOf(bare.page), "pwned")
      }).pipe(Effect.provide(nodeLayer))
  )
})

describe("the inspector's HTML page, as text", () => {
  it.live(
    "html_bodies_only_when_asked: the task's text and the summary's text are not on the page unless the report was made with bodies; control: with bodies they are",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const folder = yield* populated(path.join(dir, "state"))
        const hidden = yield* Inspector.inspect(folder)
        const shown = yield* Inspector.inspect(folder, { bodies: true })
        const page = (report: Inspector.Report) => {
          const journal = report.journals[0]
          assert.isDefined(journal)
          return journal === undefined ? "" : renderHtml(report, journal)
        }
        const quiet = page(hidden)
        assert.include(quiet, 'id="conversation"', "the conversation is listed")
        assert.include(quiet, "bodies hidden")
        for (const body of [taskText, summaryText, '"target":"staging"']) {
          assert.notInclude(quiet, body)
          assert.notInclude(quiet, body.replaceAll("'", "&#39;").replaceAll('"', "&quot;"))
        }
        const loud = page(shown)
        assert.include(loud, taskText)
        assert.include(loud, summaryText.replaceAll("'", "&#39;"))
        assert.include(loud, "&quot;target&quot;:&quot;staging&quot;")
      }).pipe(Effect.provide(nodeLayer))
  )

  it.live(
    "html_trailing_marker: an offload no request has carried yet (the journal ends after it) is marked on a 'next' slot after the last request; control: the whole journal has no such slot",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const folder = yield* populated(path.join(dir, "state"))
        const report = yield* Inspector.inspect(folder)
        const journal = report.journals[0]
        assert.isDefined(journal)
        if (journal === undefined) return
        const lastOffload = journal.entries.findLast((entry) => entry._tag === "ArtifactOffloaded")
        assert.isDefined(lastOffload)
        const cut: Inspector.JournalReport = {
          ...journal,
          entries: journal.entries.filter((entry) => entry.seq <= (lastOffload?.seq ?? -1))
        }
        assert.strictEqual(requestsOf(cut).length, 3)
        const offloadAt = (html: string) =>
          Array.from(html.matchAll(/class="marker marker-offload"[^>]*data-request="(\d+)"/g), (match) =>
            Number(match[1])
          )
        const trailing = renderHtml(report, cut)
        assert.deepStrictEqual(offloadAt(trailing), [1, 3])
        assert.match(trailing, />next<\/text>/)
        assert.include(trailing, "after the last request")
        const whole = renderHtml(report, journal)
        assert.deepStrictEqual(offloadAt(whole), [1, 3])
        assert.notMatch(whole, />next<\/text>/)
        assert.notInclude(whole, "after the last request")
      }).pipe(Effect.provide(nodeLayer))
  )
})
