/**
 * What the offload of `ToolResults` promises a caller at the edges the turn-level
 * offload tests (`ToolResultOffload.test.ts`) do not pin down: the exact
 * call-id encoding at each character-class boundary and at the 96-character
 * limit, the journal record (path, size, digest without its prefix, the
 * disposition only when it is not `Written`), the abstract budget passed on,
 * the warning and span attributes an operator sees, the re-admission of a
 * private capability exactly when a result may cross the threshold, and the
 * refusals (wrong task's journal, a copied target, no output binding, no
 * private writer) with the details they name. Each has a negative control
 * against deliberately broken wiring.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPathPolicy } from "@tessera/artifacts"
import { NodeDigest } from "@tessera/node"
import {
  type FilesystemTaskRuntime,
  Journal,
  Model,
  PrivateSummaries,
  ToolResults,
  VolumeStore
} from "@tessera/runtime"
import { Effect, Exit, Logger, Option } from "effect"
import * as Offload from "../../../runtime/src/internal/offload.js"
import { recordSpans } from "./support/spans.ts"
import { journalFolder } from "./support/turns.ts"
import { dataFolderOf, runInWorld, task, taskId, type World } from "./support/world.ts"

const segment = (id: string) => Effect.runSync(ToolResults.callIdSegment(id).pipe(Effect.provide(NodeDigest.layer)))

const sha256Hex = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")

describe("ToolResults offload call-id segments", () => {
  it("call_id_kept_characters: digits, ASCII letters and _ stay; the bytes just outside each range are encoded", () => {
    assert.strictEqual(segment("09AZaz_"), "09AZaz_")
    assert.strictEqual(segment("0123456789"), "0123456789")
    assert.strictEqual(segment("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    assert.strictEqual(segment("abcdefghijklmnopqrstuvwxyz"), "abcdefghijklmnopqrstuvwxyz")
    // 0x2f and 0x3a around the digits, 0x40 and 0x5b around the capitals, 0x60 and 0x7b around the small letters,
    // 0x5e and 0x60 around the underscore.
    assert.strictEqual(segment("/:@[`{^"), ".2f.3a.40.5b.60.7b.5e")
    assert.strictEqual(segment("call-1.x"), "call.2d1.2ex")
  })

  it("call_id_encoded_bytes: every other UTF-8 byte is . and two lowercase hex digits, padded", () => {
    assert.strictEqual(segment("\n"), ".0a")
    assert.strictEqual(segment("\0"), ".00")
    assert.strictEqual(segment("é"), ".c3.a9")
    assert.strictEqual(segment("👩"), ".f0.9f.91.a9")
    assert.strictEqual(segment("\u007f"), ".7f")
  })

  it("call_id_lengths: empty is ~empty, 96 characters stay whole, 97 keep their first 63 and ~ and 32 hex digits of the id's SHA-256", () => {
    assert.strictEqual(segment(""), "~empty")
    assert.strictEqual(segment("a".repeat(96)), "a".repeat(96))
    const long = "a".repeat(97)
    assert.strictEqual(segment(long), `${"a".repeat(63)}~${sha256Hex(long).slice(0, 32)}`)
    // 32 dashes encode to exactly 96 characters; 33 to 99.
    assert.strictEqual(segment("-".repeat(32)), ".2d".repeat(32))
    const dashes = "-".repeat(33)
    assert.strictEqual(segment(dashes), `${".2d".repeat(21)}~${sha256Hex(dashes).slice(0, 32)}`)
    const mixed = `é${"b".repeat(200)}`
    assert.strictEqual(segment(mixed), `.c3.a9${"b".repeat(57)}~${sha256Hex(mixed).slice(0, 32)}`)
  })

  it("negative control: an encoding that keeps - (the target's separator) lets two calls share a segment", () => {
    const keepsDash = (id: string) => id.replace(/[^A-Za-z0-9_-]/g, (c) => `.${c.charCodeAt(0).toString(16)}`)
    assert.strictEqual(keepsDash("a-t1"), "a-t1")
    assert.notInclude(segment("a-t1"), "-")
  })

  it("result_target: tool-results/<task>-t<turn>-s<step>-<call>.txt", () => {
    const target = Effect.runSync(
      ToolResults.resultTarget({
        task: taskId("task-9"),
        turn: 2,
        step: 3,
        call: Model.toolCall("call:1", "produce", {})
      }).pipe(Effect.provide(NodeDigest.layer))
    )
    assert.strictEqual(target, "tool-results/task-9-t2-s3-call.3a1.txt")
    assert.strictEqual(VolumeStore.artifactFolder, "artifacts")
  })
})

/** A task bound with write on its private volume and on the output volume. */
const boundTask = (world: World, output: boolean) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.some(world.privateRef), [world.privateRef, world.outputRef])
    return yield* runtime.bindTask({
      scope: yield* world.scopeFor([world.privateRef, world.outputRef]),
      output: output ? Option.some(world.outputRef) : Option.none()
    })
  })

/** Runs `body` with the journal of `forTask` on the world's journal volume. */
const withJournal = <A, E, R>(
  world: World,
  body: (journal: Journal.JournalService) => Effect.Effect<A, E, R>,
  forTask = task
) =>
  Effect.flatMap(journalFolder(world), (folder) =>
    Effect.flatMap(Effect.service(Journal.Journal), body).pipe(Effect.provide(Journal.layer({ folder, task: forTask })))
  )

const call = (id: string) => Model.toolCall(id, "produce", { size: 1 })
const toolContext = (id: string, turn = 1, step = 1) => ({ task, turn, step, call: call(id) })
const resultOf = (id: string, content: string) =>
  Model.toolResult({ callId: id, name: "produce", content, isError: false })

const config = (threshold: number, destination: "Private" | "Output" = "Output", abstractBytes?: number) => ({
  threshold,
  readTool: "read_artifact",
  destination,
  ...(abstractBytes === undefined ? {} : { abstractBytes })
})

const offloadedEntries = (journal: Journal.JournalService) =>
  Effect.map(journal.state, (state) =>
    Option.filter(state.lastEntry, (entry) => entry._tag === "ArtifactOffloaded").pipe(Option.getOrUndefined)
  )

/** The last journal entry when it records an offload, minus the header fields every entry has. */
const lastOffload = (journal: Journal.JournalService) =>
  Effect.map(offloadedEntries(journal), (entry) => {
    if (entry === undefined) return undefined
    const { seq: _seq, at: _at, ...rest } = entry as unknown as Record<string, unknown>
    return rest
  })

describe("ToolResults offloadResult", () => {
  it("journal_record: an offload over the threshold returns the pointer and journals path, size and bare digest, and a disposition only when the file was not freshly written", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const context = yield* boundTask(world, true)
        const target = yield* ToolResults.outputTarget(context)
        yield* withJournal(world, (journal) =>
          Effect.gen(function* () {
            const body = "w".repeat(300)
            const first = yield* ToolResults.offloadResult(
              config(100),
              target,
              journal,
              toolContext("c-1", 2, 3),
              resultOf("c-1", body)
            )
            assert.isTrue(first.content.startsWith("[artifact] "), first.content)
            assert.strictEqual(first.callId, "c-1")
            assert.strictEqual(first.name, "produce")
            const written = yield* lastOffload(journal)
            const relative = "tool-results/task-1-t2-s3-c.2d1.txt"
            const expected = {
              _tag: "ArtifactOffloaded",
              turn: 2,
              step: 3,
              callId: "c-1",
              volume: world.outputRef,
              path: `artifacts/${relative}`,
              size: 300,
              sha256: sha256Hex(body)
            }
            assert.deepInclude(written, expected)
            assert.notProperty(written, "disposition")
            const folder = yield* world.host.store.folderOf(world.outputRef)
            assert.strictEqual(fs.readFileSync(path.join(folder, "artifacts", relative), "utf8"), body)

            // The same call again: the file holds these bytes already (Reused), then other bytes (Replaced).
            yield* ToolResults.offloadResult(
              config(100),
              target,
              journal,
              toolContext("c-1", 2, 3),
              resultOf("c-1", body)
            )
            assert.deepInclude(yield* lastOffload(journal), { ...expected, disposition: "Reused" })
            const other = "v".repeat(301)
            yield* ToolResults.offloadResult(
              config(100),
              target,
              journal,
              toolContext("c-1", 2, 3),
              resultOf("c-1", other)
            )
            assert.deepInclude(yield* lastOffload(journal), {
              ...expected,
              size: 301,
              sha256: sha256Hex(other),
              disposition: "Replaced"
            })
          })
        )
      })
    ))

  it("inline_below_threshold: a result of at most threshold bytes is returned as it is and nothing is journaled or written", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const context = yield* boundTask(world, true)
        const target = yield* ToolResults.outputTarget(context)
        yield* withJournal(world, (journal) =>
          Effect.gen(function* () {
            const result = resultOf("c1", "x".repeat(100))
            const kept = yield* ToolResults.offloadResult(config(100), target, journal, toolContext("c1"), result)
            assert.strictEqual(kept, result)
            assert.strictEqual((yield* journal.state).entries, 0)
            const folder = yield* world.host.store.folderOf(world.outputRef)
            assert.isFalse(fs.existsSync(path.join(folder, "artifacts", "tool-results")))
          })
        )
      })
    ))

  it("abstract_budget: the pointer's abstract follows abstractBytes when given and the default otherwise", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const context = yield* boundTask(world, true)
        const target = yield* ToolResults.outputTarget(context)
        yield* withJournal(world, (journal) =>
          Effect.gen(function* () {
            const body = `${"first line of the body ".repeat(4)}\n${"q".repeat(2_000)}`
            const small = yield* ToolResults.offloadResult(
              config(100, "Output", 8),
              target,
              journal,
              toolContext("a"),
              resultOf("a", body)
            )
            const usual = yield* ToolResults.offloadResult(
              config(100),
              target,
              journal,
              toolContext("b"),
              resultOf("b", body)
            )
            assert.include(usual.content, "first line of the body")
            assert.notInclude(small.content, "first line of the body")
            assert.isBelow(small.content.length, usual.content.length)
          })
        )
      })
    ))

  it("refused_offload_warns: a refused offload keeps the result, journals nothing and logs one warning naming the call and the refusal; a plain inline result logs nothing", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const context = yield* boundTask(world, true)
        const target = yield* ToolResults.outputTarget(context)
        const logs: Array<{ readonly level: string; readonly text: string }> = []
        const collector = Logger.make(({ logLevel, message }) => {
          logs.push({ level: logLevel, text: Array.isArray(message) ? message.join(" ") : String(message) })
        })
        const everything = ArtifactPathPolicy.layer({ isInternalState: () => true, isUnderInternalRoot: () => true })
        yield* withJournal(world, (journal) =>
          Effect.gen(function* () {
            const result = resultOf("c1", "y".repeat(500))
            const kept = yield* ToolResults.offloadResult(config(100), target, journal, toolContext("c1"), result)
            assert.strictEqual(kept, result)
            const small = resultOf("c2", "y")
            assert.strictEqual(
              yield* ToolResults.offloadResult(config(100), target, journal, toolContext("c2"), small),
              small
            )
            assert.strictEqual((yield* journal.state).entries, 0)
          }).pipe(Effect.provide(everything))
        ).pipe(Effect.provide(Logger.layer([collector])))
        const warnings = logs.filter((log) => log.level === "Warn")
        assert.strictEqual(warnings.length, 1, JSON.stringify(logs))
        const folder = yield* world.host.store.folderOf(world.outputRef)
        const absolute = path.join(folder, "artifacts", "tool-results", "task-1-t1-s1-c1.txt")
        assert.strictEqual(
          warnings[0]?.text,
          `offload of c1 refused; kept inline: artifact path ${absolute} is a host internal state location`
        )
      })
    ))

  it("span_attributes: the offload span carries the task, turn, step, tool, call, volume, threshold, the outcome and the size", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const context = yield* boundTask(world, true)
        const target = yield* ToolResults.outputTarget(context)
        const { named, tracer } = recordSpans()
        const refuseAll = ArtifactPathPolicy.layer({ isInternalState: () => false, isUnderInternalRoot: () => true })
        yield* withJournal(world, (journal) =>
          Effect.gen(function* () {
            const run = (id: string, content: string) =>
              ToolResults.offloadResult(config(100), target, journal, toolContext(id, 4, 5), resultOf(id, content))
            yield* run("big", "b".repeat(400))
            yield* run("big", "b".repeat(400))
            yield* run("small", "s")
            yield* run("refused", "r".repeat(400)).pipe(Effect.provide(refuseAll))
          }).pipe(Effect.withTracer(tracer))
        )
        const spans = named("ToolResults.offloadResult")
        assert.strictEqual(spans.length, 4)
        const attributes = spans.map((span) => Object.fromEntries(span.attributes))
        const common = (id: string) => ({
          "tessera.task": task,
          "tessera.turn": 4,
          "tessera.step": 5,
          "gen_ai.tool.name": "produce",
          "gen_ai.tool.call.id": id,
          "tessera.offload.volume": world.outputRef.volume,
          "tessera.offload.threshold": 100
        })
        assert.deepInclude(attributes[0], {
          ...common("big"),
          "tessera.offload.outcome": "Written",
          "tessera.offload.size": 400
        })
        assert.deepInclude(attributes[1], {
          ...common("big"),
          "tessera.offload.outcome": "Reused",
          "tessera.offload.size": 400
        })
        assert.deepInclude(attributes[2], { ...common("small"), "tessera.offload.outcome": "Inline" })
        assert.notProperty(attributes[2], "tessera.offload.size")
        assert.deepInclude(attributes[3], { ...common("refused"), "tessera.offload.outcome": "Refused" })
      })
    ))

  it("negative control: without a tracer of the program's own, the same offload makes no span, so the attributes above come from the offload's own annotations", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const context = yield* boundTask(world, true)
        const target = yield* ToolResults.outputTarget(context)
        const { named } = recordSpans()
        yield* withJournal(world, (journal) =>
          ToolResults.offloadResult(config(100), target, journal, toolContext("big"), resultOf("big", "b".repeat(400)))
        )
        assert.strictEqual(named("ToolResults.offloadResult").length, 0)
      })
    ))
})

const metaFile = (world: World) =>
  path.join(world.root, ...VolumeStore.metaFolder, VolumeStore.metaFileName(world.privateRef.volume))

describe("ToolResults private targets", () => {
  it("private_readmission: a private target re-reads its volume exactly when a result crosses the threshold in UTF-8 bytes, and fails VolumeChanged then", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const context = yield* boundTask(world, false)
        const capability = yield* PrivateSummaries.resolve(context)
        const target = yield* ToolResults.privateTarget.pipe(PrivateSummaries.provide(capability))
        assert.strictEqual(target.root, path.join(dataFolderOf(world, world.privateRef), "artifacts"))
        assert.strictEqual(target.task, task)
        assert.strictEqual(target.storeRoot, world.host.store.root)
        assert.deepStrictEqual(target.volume, world.privateRef)
        const original = fs.readFileSync(metaFile(world), "utf8")
        fs.writeFileSync(metaFile(world), original.replace('"researcher"', '"reviewer"'))
        // Making a target admits the capability too, and names itself when the volume changed.
        const remade = yield* Effect.flip(ToolResults.privateTarget.pipe(PrivateSummaries.provide(capability)))
        assert.strictEqual(remade._tag === "Unauthorized" ? remade.reason : remade._tag, "VolumeChanged")
        assert.isTrue(remade.message.includes("ToolResults.privateTarget: volume "), remade.message)
        yield* withJournal(world, (journal) =>
          Effect.gen(function* () {
            const run = (content: string) =>
              Effect.exit(
                ToolResults.offloadResult(
                  config(12, "Private"),
                  target,
                  journal,
                  toolContext("c1"),
                  resultOf("c1", content)
                ).pipe(PrivateSummaries.provide(capability))
              )
            // 12 bytes do not cross: nothing is written, so the volume is not read.
            const twelve = yield* run("ééééé12")
            assert.isTrue(Exit.isSuccess(twelve) && twelve.value.content === "ééééé12")
            // 13 bytes cross: the volume is read before the body is written, and its change refuses the write.
            const five = yield* run("ééééé123")
            assert.isTrue(Exit.isFailure(five))
            const error = Exit.isFailure(five) ? Option.getOrUndefined(Exit.findErrorOption(five)) : undefined
            assert.strictEqual(error?._tag, "Unauthorized")
            assert.strictEqual(error?._tag === "Unauthorized" ? error.reason : "", "VolumeChanged")
            assert.include(error?.message ?? "", "ToolResults.offloadResult")
            fs.writeFileSync(metaFile(world), original)
            const restored = yield* run("abcde".repeat(10))
            assert.isTrue(Exit.isSuccess(restored) && restored.value.content.startsWith("[artifact] "))
          })
        )
      })
    ))

  it("output_not_readmitted: an output target has no capability to re-admit, so a changed private volume does not touch it", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const context = yield* boundTask(world, true)
        const target = yield* ToolResults.outputTarget(context)
        fs.writeFileSync(
          metaFile(world),
          fs.readFileSync(metaFile(world), "utf8").replace('"researcher"', '"reviewer"')
        )
        const result = yield* withJournal(world, (journal) =>
          ToolResults.offloadResult(config(12), target, journal, toolContext("c1"), resultOf("c1", "o".repeat(50)))
        )
        assert.isTrue(result.content.startsWith("[artifact] "))
      })
    ))

  it("target_for: Output names the output volume, a private offload writes through the gate's writer or resolves one; a writerless task is Unauthorized naming the entry", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const context = yield* boundTask(world, true)
        const output = yield* ToolResults.outputTarget(context, "Entry.x")
        assert.deepStrictEqual(output.volume, world.outputRef)
        const folder = yield* world.host.store.folderOf(world.outputRef)
        assert.strictEqual(output.root, path.join(folder, "artifacts"))
        assert.strictEqual(output.storeRoot, world.host.store.root)
        assert.strictEqual(output.task, task)
        const resolved = yield* Offload.offloadWriter(context, "Entry.x", Option.none())
        assert.deepStrictEqual(resolved.volume, world.privateRef)
        const capability = yield* PrivateSummaries.resolve(context)
        const armed = yield* Offload.offloadWriter(context, "Entry.x", Option.some(capability))
        assert.strictEqual(armed, capability)
        const target = yield* ToolResults.privateTarget.pipe(PrivateSummaries.provide(armed))
        assert.deepStrictEqual(target.volume, world.privateRef)

        // A task whose runtime has no private volume.
        const plain = yield* world.openRuntime(Option.none(), [world.outputRef])
        const writerless = yield* plain.bindTask({
          scope: yield* world.scopeFor([world.outputRef]),
          output: Option.none()
        })
        const refused = yield* Effect.flip(Offload.offloadWriter(writerless, "Entry.x", Option.none()))
        assert.strictEqual(refused._tag, "Unauthorized")
        if (refused._tag === "Unauthorized") {
          assert.isTrue(
            refused.detail.startsWith("Entry.x: private offload needs a private writer, but "),
            refused.detail
          )
          assert.strictEqual(refused.task, task)
        }
        // The gate's writer is used as it is: a writerless task handed one gets its volume.
        const lent = yield* Offload.offloadWriter(writerless, "Entry.x", Option.some(capability))
        assert.deepStrictEqual(lent.volume, world.privateRef)
        const noOutput = yield* Effect.flip(ToolResults.outputTarget(writerless, "Entry.y"))
        assert.strictEqual(noOutput._tag, "Unauthorized")
        if (noOutput._tag === "Unauthorized") {
          assert.strictEqual(noOutput.reason, "MissingWriteGrant")
          assert.strictEqual(
            noOutput.detail,
            "Entry.y: offload to Output needs an output binding, and the task has none"
          )
        }
      })
    ))

  it("target_for_store_errors: a private volume whose metadata cannot be read fails as the store said, not as a missing writer", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const context = yield* boundTask(world, false)
        fs.writeFileSync(metaFile(world), "{ not json")
        const error = yield* Effect.flip(Offload.offloadWriter(context, "Entry.z", Option.none()))
        assert.strictEqual(error._tag, "VolumeMetadataInvalid")
      })
    ))

  it("output_target_refusals: no output binding is MissingWriteGrant naming the default entry and the task; a context the library did not mint is refused first", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const context = yield* boundTask(world, false)
        const refused = yield* Effect.flip(ToolResults.outputTarget(context))
        if (refused._tag !== "Unauthorized") return assert.fail(`expected Unauthorized, got ${refused._tag}`)
        const missing = refused
        assert.strictEqual(missing.reason, "MissingWriteGrant")
        assert.strictEqual(
          missing.detail,
          "ToolResults.outputTarget: offload to Output needs an output binding, and the task has none"
        )
        assert.strictEqual(missing.task, task)
        const bound = yield* boundTask(world, true)
        const copied = { ...bound } as FilesystemTaskRuntime.TaskContext
        const forged = yield* Effect.flip(ToolResults.outputTarget(copied))
        assert.strictEqual(forged._tag === "Unauthorized" ? forged.reason : forged._tag, "NotMinted")
      })
    ))
})

describe("ToolResults offload target admission", () => {
  it("private_hooks_take_the_targets_writer: hooks for a private target made under another task's capability are CapabilityMismatch naming both, before a file is written; the target's own capability (control) makes them", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const context = yield* boundTask(world, false)
        const capability = yield* PrivateSummaries.resolve(context)
        const target = yield* ToolResults.privateTarget.pipe(PrivateSummaries.provide(capability))
        const runtime = yield* world.openRuntime(Option.some(world.privateRef), [world.privateRef])
        const otherTask = taskId("task-2")
        const other = yield* runtime.bindTask({
          scope: yield* world.scopeFor([world.privateRef], otherTask),
          output: Option.none()
        })
        const foreign = yield* PrivateSummaries.resolve(other)
        const hooksUnder = (writer: PrivateSummaries.PrivateWriterCapability) =>
          withJournal(world, (journal) =>
            ToolResults.offloadHooks(config(10, "Private"), target, journal).pipe(PrivateSummaries.provide(writer))
          )
        const refused = yield* Effect.flip(hooksUnder(foreign))
        assert.strictEqual(refused._tag === "Unauthorized" ? refused.reason : refused._tag, "CapabilityMismatch")
        assert.include(refused.message, `of task ${task}, but the capability in scope writes volume `)
        assert.include(refused.message, `for task ${otherTask}`)
        assert.isFalse(fs.existsSync(target.root))
        const made = yield* hooksUnder(capability)
        assert.isDefined(made.onToolResult)
      })
    ))

  it("journal_of_another_task: a target used with another task's journal is CapabilityMismatch naming both tasks and the journal file, before anything is written", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const context = yield* boundTask(world, true)
        const target = yield* ToolResults.outputTarget(context)
        const other = taskId("task-2")
        const { error, file } = yield* withJournal(
          world,
          (journal) =>
            Effect.map(
              Effect.flip(
                ToolResults.offloadResult(
                  config(10),
                  target,
                  journal,
                  toolContext("c1"),
                  resultOf("c1", "m".repeat(100))
                )
              ),
              (error) => ({ error, file: journal.file })
            ),
          other
        )
        assert.strictEqual(error._tag, "Unauthorized")
        if (error._tag === "Unauthorized") {
          assert.strictEqual(error.reason, "CapabilityMismatch")
          assert.strictEqual(
            error.detail,
            `ToolResults.offloadHooks: the offload target was made for task ${task}, but the journal ${file} is task ${other}'s`
          )
          assert.strictEqual(error.task, other)
          assert.deepStrictEqual(error.volume, world.outputRef)
        }
        const hooks = yield* Effect.exit(
          withJournal(world, (journal) => ToolResults.offloadHooks(config(10), target, journal), other)
        )
        assert.isTrue(Exit.isFailure(hooks))
        const folder = yield* world.host.store.folderOf(world.outputRef)
        assert.isFalse(fs.existsSync(path.join(folder, "artifacts")))
      })
    ))

  it("hooks_offload: offloadHooks admits the target once and its onToolResult offloads like offloadResult; a copied target is NotMinted", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const context = yield* boundTask(world, true)
        const target = yield* ToolResults.outputTarget(context)
        yield* withJournal(world, (journal) =>
          Effect.gen(function* () {
            const hooks = yield* ToolResults.offloadHooks(config(10), target, journal)
            const onToolResult = hooks.onToolResult as NonNullable<typeof hooks.onToolResult>
            const out = yield* onToolResult(toolContext("h1"), resultOf("h1", "h".repeat(100)))
            assert.isTrue(out.content.startsWith("[artifact] "))
            assert.deepInclude(yield* lastOffload(journal), { callId: "h1", size: 100 })
            const copied = { ...target }
            const forged = yield* Effect.flip(ToolResults.offloadHooks(config(10), copied, journal))
            assert.strictEqual(forged.reason, "NotMinted")
            assert.strictEqual(
              forged.detail,
              "ToolResults.offloadHooks: the offload target was not made by the library (built by hand or copied); only values the library minted are trusted"
            )
            const direct = yield* Effect.flip(
              ToolResults.offloadResult(config(10), copied, journal, toolContext("h2"), resultOf("h2", "h".repeat(100)))
            )
            assert.strictEqual(direct._tag === "Unauthorized" ? direct.reason : direct._tag, "NotMinted")
          })
        )
      })
    ))
})
