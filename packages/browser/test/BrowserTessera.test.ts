/**
 * The browser front door (`BrowserTessera.open`), in headless Chromium: the
 * same shape as on Node: get-or-create, durable turns with offload, and
 * the redaction decision required, applied and journaled.
 */
import { assert, describe, it } from "@effect/vitest"
import { BrowserTessera } from "@tessera/browser"
import { Tool } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Option, Schema } from "effect"
import { withRoot } from "./support.ts"

const secret = "AKIAIOSFODNN7EXAMPLE"
const fetchReport = Tool.make({
  name: "fetch_report",
  description: "Fetches a report by name",
  input: Schema.Struct({ name: Schema.String }),
  handler: ({ name }) => Effect.succeed(`Report ${name}, key ${secret}\n${"within tolerance\n".repeat(1_000)}`)
})

const script = () =>
  ScriptedModel.layer([ScriptedModel.calling("fetch_report", { name: "north" }), "All within tolerance."])

/** Two programs on one namespace: the second continues the task; what each journaled, and the artifact's text. */
const twice = (root: string, redactor: BrowserTessera.OpenOptions<unknown>["redactor"]) =>
  Effect.gen(function* () {
    // The namespace's Web Lock is the origin's: every test takes a namespace of its own.
    const namespace = `ns-${crypto.randomUUID()}`
    const once = Effect.scoped(
      Effect.gen(function* () {
        const tessera = yield* BrowserTessera.open({ agent: "researcher", redactor, root, namespace })
        const outcome = yield* tessera.run("survey-1", "Summarize the north report.", { tools: [fetchReport] })
        const entries = yield* tessera.entries("survey-1")
        return { outcome, entries, folder: tessera.folder, redaction: tessera.redaction }
      })
    )
    const first = yield* once.pipe(Effect.provide(script()))
    const second = yield* once.pipe(Effect.provide(script()))
    const offloaded = first.entries.find((entry) => entry._tag === "ArtifactOffloaded")
    const artifact =
      offloaded?._tag === "ArtifactOffloaded"
        ? yield* Effect.promise(async () => {
            let folder = await navigator.storage.getDirectory()
            const parts = `${first.folder}/volumes/${offloaded.volume?.volume ?? ""}/${offloaded.path}`
              .split("/")
              .filter(Boolean)
            const file = parts.pop() ?? ""
            for (const part of parts) folder = await folder.getDirectoryHandle(part)
            return (await (await folder.getFileHandle(file)).getFile()).text()
          })
        : undefined
    return { first, second, artifact }
  }).pipe(Effect.provide(BrowserTessera.layer))

const openedWith = (entries: ReadonlyArray<{ readonly _tag: string }>) =>
  entries.flatMap((entry) => (entry._tag === "TurnOpened" ? [(entry as { redaction?: string }).redaction] : []))

describe("the browser front door", () => {
  it("browser_front_door: a run offloads the large result scrubbed, records Scrubbed, and a second program opened right after the first (its Web Lock free once its scope closed) continues the task", () =>
    withRoot("front-door", (root) =>
      Effect.runPromise(
        Effect.gen(function* () {
          const { artifact, first, second } = yield* twice(root, Option.some(BrowserTessera.defaultRedactor))
          assert.strictEqual(first.outcome._tag, "Answered")
          assert.strictEqual(first.redaction, "Scrubbed")
          assert.deepStrictEqual(openedWith(first.entries), ["Scrubbed"])
          assert.isDefined(artifact)
          assert.notInclude(artifact ?? "", secret)
          assert.deepStrictEqual(openedWith(second.entries), ["Scrubbed", "Scrubbed"])
        })
      )
    ))

  it("browser_front_door negative control: Option.none() stores the key verbatim and the journal says Verbatim; a missing redactor is InvalidInput", () =>
    withRoot("front-door-verbatim", (root) =>
      Effect.runPromise(
        Effect.gen(function* () {
          const { artifact, first } = yield* twice(root, Option.none())
          assert.strictEqual(first.redaction, "Verbatim")
          assert.deepStrictEqual(openedWith(first.entries), ["Verbatim"])
          assert.include(artifact ?? "", secret)
          const missing = yield* Effect.flip(
            Effect.scoped(BrowserTessera.open({ agent: "researcher", root } as never)).pipe(
              Effect.provide(BrowserTessera.layer)
            )
          )
          assert.strictEqual(missing._tag === "InvalidInput" ? missing.field : missing._tag, "redactor")
        })
      )
    ))
})
