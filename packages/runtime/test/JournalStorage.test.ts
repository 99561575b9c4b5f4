/**
 * The three journal durabilities: the same lines and replay for all; group
 * commit syncs a step's entries together, before the next request, before a
 * tool that must not run twice, and when the turn ends; a power loss at any
 * point leaves a journal that reopens to a prefix of the entries, every
 * synced one included; memory-only keeps the lines in the process.
 */
import * as nodeFs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@tessera/core"
import * as Executor from "@tessera/runtime/Executor"
import * as History from "@tessera/runtime/History"
import * as Journal from "@tessera/runtime/Journal"
import * as JournalStorage from "@tessera/runtime/JournalStorage"
import * as Model from "@tessera/runtime/Model"
import * as Tool from "@tessera/runtime/Tool"
import { Effect, Exit, FileSystem, Layer, Schema } from "effect"
import * as fc from "fast-check"

const task = Schema.decodeUnknownSync(Ids.TaskId)("durable-1")

/**
 * A simulated storage device under the journal: `text` is what was written,
 * `durable` how much of it a power loss keeps for sure. Every write and sync
 * leaves a snapshot, the device's state at that instant.
 */
interface Device {
  text: string
  durable: number
  syncs: number
  readonly snapshots: Array<{ readonly text: string; readonly durable: number }>
}

const makeDevice = (): Device => ({ text: "", durable: 0, syncs: 0, snapshots: [] })

/**
 * A journal file on `device`, with blocking calls or effects only. `dropSyncs` is the broken wiring of the
 * negative controls: a platform whose sync makes nothing durable.
 */
const deviceFile = (
  device: Device,
  style: "blocking" | "effectful",
  dropSyncs = false
): JournalStorage.JournalFileShape => ({
  openAppend: () =>
    Effect.sync(() => {
      const snapshot = () => device.snapshots.push({ text: device.text, durable: device.durable })
      const write = (line: string) => {
        device.text += line
        snapshot()
      }
      const sync = () => {
        device.syncs++
        if (!dropSyncs) device.durable = device.text.length
        snapshot()
      }
      const append = (line: string) => {
        write(line)
        sync()
      }
      const truncate = (size: number) => {
        device.text = device.text.slice(0, size)
        device.durable = Math.min(device.durable, size)
        sync()
      }
      const handle: JournalStorage.AppendHandle = {
        append: (line) => Effect.sync(() => append(line)),
        write: (line) => Effect.sync(() => write(line)),
        sync: Effect.sync(sync),
        truncate: (size) => Effect.sync(() => truncate(size))
      }
      return style === "blocking" ? { ...handle, blocking: { append, write, sync, truncate } } : handle
    })
})

/** The journal lines of `text` with where each starts. */
const linesOf = (text: string) => {
  const lines: Array<{ readonly start: number; readonly tag: string; readonly callId?: string }> = []
  let start = 0
  for (const line of text.split("\n")) {
    if (line.length > 0) {
      const parsed = JSON.parse(line) as { readonly _tag: string; readonly callId?: string }
      lines.push({ start, tag: parsed._tag, ...(parsed.callId === undefined ? {} : { callId: parsed.callId }) })
    }
    start += line.length + 1
  }
  return lines
}

/** A turn's script: per tool step, its calls (true = the tool is idempotent); an answer follows the last step. */
type Script = ReadonlyArray<ReadonlyArray<boolean>>

const idem = Tool.make({
  name: "idem",
  description: "Harmless to run twice",
  input: Schema.Struct({ id: Schema.String }),
  idempotent: true,
  handler: ({ id }) => Effect.succeed(`idem ${id}`)
})

/**
 * Runs one turn of `script` on `device` and checks group commit's promises as it goes: when a request is
 * dispatched every earlier step's entry is durable; when a tool that is not idempotent starts, its call is
 * durable; when the turn returns, everything is. Returns what broke them.
 */
const runScript = (
  script: Script,
  file: JournalStorage.JournalFileShape,
  device: Device,
  durability: JournalStorage.Durability,
  folder: string
) =>
  Effect.gen(function* () {
    const violations: Array<string> = []
    let requests = 0
    const model = Model.layerFromGenerate(() =>
      Effect.sync(() => {
        requests++
        const lines = linesOf(device.text)
        const dispatched = lines.filter((line) => line.tag === "RequestDispatched").at(-1)
        if (dispatched !== undefined && dispatched.start > device.durable) {
          violations.push(`request ${requests} dispatched while the step before it was not durable`)
        }
        const calls = script[requests - 1]
        return calls === undefined
          ? Model.response({ text: "done" })
          : Model.response({
              toolCalls: calls.map((idempotent, index) =>
                Model.toolCall(`s${requests}c${index}`, idempotent ? "idem" : "once", { id: `s${requests}c${index}` })
              )
            })
      })
    )
    const once = Tool.make({
      name: "once",
      description: "Must not run twice",
      input: Schema.Struct({ id: Schema.String }),
      handler: ({ id }) =>
        Effect.sync(() => {
          const called = linesOf(device.text).find((line) => line.tag === "ToolCalled" && line.callId === id)
          if (called === undefined || called.start >= device.durable) {
            violations.push(`${id} ran before its call was durable`)
          }
          return `once ${id}`
        })
    })
    yield* Executor.runTurn(
      { tools: Tool.registry(idem, once), maxSteps: script.length + 1 },
      History.make([Model.text("user", "go")])
    ).pipe(
      Effect.provide(
        Layer.merge(
          model,
          Journal.layer({ folder, task }).pipe(
            Layer.provide(
              Layer.merge(Layer.succeed(JournalStorage.JournalFile)(file), JournalStorage.layer(durability))
            )
          )
        )
      )
    )
    if (device.durable < device.text.length) violations.push("the turn returned with entries not durable")
    return violations
  })

const tempFolder = () => nodeFs.realpathSync(nodeFs.mkdtempSync(nodePath.join(os.tmpdir(), "tessera-durability-")))

const mixedScript: Script = [[true, false], [true, true], [false]]

/** A temporary folder for the test's scope. */
const scratchFolder = Effect.gen(function* () {
  const fs = yield* FileSystem.FileSystem
  return yield* fs.makeTempDirectoryScoped({ prefix: "tessera-" })
})

/** The turn of `script` on a fresh device (its journal in a fresh folder): the device and what broke. */
const onDevice = (
  script: Script,
  durability: JournalStorage.Durability,
  style: "blocking" | "effectful" = "blocking",
  dropSyncs = false
) =>
  Effect.gen(function* () {
    const device = makeDevice()
    const violations = yield* runScript(
      script,
      deviceFile(device, style, dropSyncs),
      device,
      durability,
      yield* scratchFolder
    )
    return { device, violations }
  })

describe("JournalStorage durability", () => {
  describe.each(["blocking", "effectful"] as const)("group commit with %s calls", (style) => {
    it.effect(
      "group_commit_syncs_at_commit_points: a step's entries are synced together before the next request, a non-idempotent tool's call before it runs, everything before the turn returns",
      () =>
        Effect.gen(function* () {
          const { device, violations } = yield* onDevice(mixedScript, JournalStorage.groupCommit, style)
          assert.deepStrictEqual(violations, [])
          const lines = linesOf(device.text)
          // Four requests, each syncing what came before it; two tools that must not run twice; the closing entry.
          assert.strictEqual(device.syncs, 7)
          assert.isAbove(lines.length, 2 * device.syncs)
        }).pipe(Effect.provide(NodeServices.layer))
    )

    it.effect(
      "negative control: with a platform whose syncs make nothing durable, the same turn breaks every promise the test checks",
      () =>
        Effect.gen(function* () {
          const { violations } = yield* onDevice(mixedScript, JournalStorage.groupCommit, style, true)
          assert.includeMembers(violations, [
            "request 2 dispatched while the step before it was not durable",
            "s1c1 ran before its call was durable",
            "s3c0 ran before its call was durable",
            "the turn returned with entries not durable"
          ])
        }).pipe(Effect.provide(NodeServices.layer))
    )
  })

  it.effect("per_entry_syncs_every_entry: the default makes each line durable before the next is written", () =>
    Effect.gen(function* () {
      const { device, violations } = yield* onDevice(mixedScript, JournalStorage.perEntry, "blocking")
      assert.deepStrictEqual(violations, [])
      assert.strictEqual(device.syncs, linesOf(device.text).length)
      for (const snapshot of device.snapshots)
        assert.isAtLeast(snapshot.durable, snapshot.text.lastIndexOf("\n", snapshot.text.length - 2) + 1)
    }).pipe(Effect.provide(NodeServices.layer))
  )

  it.effect(
    "group_commit_syncs_when_the_scope_closes: an entry waiting for its step's sync is synced when the journal closes",
    () =>
      Effect.gen(function* () {
        const folder = yield* scratchFolder
        const device = makeDevice()
        yield* Effect.scoped(
          Effect.gen(function* () {
            const journal = yield* Journal.open({ folder, task })
            yield* journal.openTurn
            assert.strictEqual(device.durable, 0, "TurnOpened waits for its step")
          })
        ).pipe(
          Effect.provideService(JournalStorage.JournalFile, deviceFile(device, "blocking")),
          Effect.provideService(JournalStorage.JournalDurability, JournalStorage.groupCommit)
        )
        assert.strictEqual(device.durable, device.text.length)
        assert.strictEqual(linesOf(device.text)[0]?.tag, "TurnOpened")
      }).pipe(Effect.provide(NodeServices.layer))
  )

  it("group_commit_power_loss_leaves_a_prefix: a loss at any write or sync, keeping any part of what was not synced, reopens to a prefix of the entries that holds every synced one, and no tool that must not run twice ran unrecorded", async () => {
    const scratch = tempFolder()
    try {
      let run = 0
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(fc.boolean(), { maxLength: 3 }), { minLength: 1, maxLength: 4 }),
          fc.constantFrom("blocking" as const, "effectful" as const),
          fc.double({ min: 0, max: 1, noNaN: true }),
          fc.double({ min: 0, max: 1, noNaN: true }),
          async (script, style, at, kept) => {
            run++
            const folder = nodePath.join(scratch, `run-${run}`)
            const device = makeDevice()
            const violations = await Effect.runPromise(
              runScript(script, deviceFile(device, style), device, JournalStorage.groupCommit, folder).pipe(
                Effect.provide(NodeServices.layer)
              )
            )
            assert.deepStrictEqual(violations, [])
            const full = linesOf(device.text).map((line) => line.tag)
            const snapshot = device.snapshots[
              Math.floor(at * (device.snapshots.length - 1))
            ] as Device["snapshots"][number]
            const unsynced = snapshot.text.slice(snapshot.durable)
            const image =
              snapshot.text.slice(0, snapshot.durable) + unsynced.slice(0, Math.floor(kept * unsynced.length))
            const crashed = nodePath.join(scratch, `crashed-${run}`)
            nodeFs.mkdirSync(crashed)
            nodeFs.writeFileSync(nodePath.join(crashed, Journal.fileName(task)), image)
            const reopened = await Effect.runPromise(
              Effect.scoped(
                Effect.andThen(Journal.open({ folder: crashed, task }), Journal.readEntries({ folder: crashed, task }))
              ).pipe(Effect.provide(NodeServices.layer))
            )
            const tags = reopened.map((entry) => entry._tag).filter((tag) => tag !== "TruncationRecovered")
            assert.deepStrictEqual(tags, full.slice(0, tags.length), "a prefix of the entries")
            assert.isAtLeast(
              tags.length,
              linesOf(snapshot.text.slice(0, snapshot.durable)).length,
              "every synced entry"
            )
          }
        ),
        { numRuns: 60 }
      )
    } finally {
      nodeFs.rmSync(scratch, { recursive: true, force: true })
    }
  }, 60_000)

  it.effect(
    "negative control: a device that kept a later line but lost an earlier one (what out-of-order writes would leave) does not reopen to a prefix",
    () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const { device } = yield* onDevice(mixedScript, JournalStorage.groupCommit)
        const lines = device.text.split("\n")
        const reordered = [...lines.slice(0, 2), ...lines.slice(3)].join("\n")
        const crashed = yield* scratchFolder
        yield* fs.writeFileString(`${crashed}/${Journal.fileName(task)}`, reordered)
        const exit = yield* Effect.exit(Effect.scoped(Journal.open({ folder: crashed, task })))
        assert.isTrue(Exit.isFailure(exit))
      }).pipe(Effect.provide(NodeServices.layer))
  )

  describe("memory-only", () => {
    /** A turn of `script` whose journal is written through `file` (a real file by default). */
    const turnOn = (
      script: Script,
      durability: JournalStorage.Durability,
      folder: string,
      file: JournalStorage.JournalFileShape = JournalStorage.fileSystem
    ) => runScript(script, file, makeDevice(), durability, folder)

    it.effect(
      "memory_only_same_lines_and_replay: the store holds the very bytes the per-entry file holds, no file is written, and the journal reopens and reads from the store",
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const onDisk = yield* fs.makeTempDirectoryScoped({ prefix: "tessera-" })
          const inMemory = yield* fs.makeTempDirectoryScoped({ prefix: "tessera-" })
          const memory = JournalStorage.memoryOnly()
          // The per-entry turn writes a real file through the default journal file.
          yield* Executor.runTurn(
            { tools: Tool.registry(idem), maxSteps: 3 },
            History.make([Model.text("user", "go")])
          ).pipe(Effect.provide(Layer.merge(scriptedModel, Journal.layer({ folder: onDisk, task }))))
          yield* Executor.runTurn(
            { tools: Tool.registry(idem), maxSteps: 3 },
            History.make([Model.text("user", "go")])
          ).pipe(
            Effect.provide(
              Layer.merge(
                scriptedModel,
                Journal.layer({ folder: inMemory, task }).pipe(Layer.provide(JournalStorage.layer(memory)))
              )
            )
          )
          const file = `${inMemory}/${Journal.fileName(task)}`
          assert.isFalse(yield* fs.exists(file), "no file under memory-only")
          assert.deepStrictEqual(memory.journals.files(), [file])
          const fromDisk = yield* fs.readFile(`${onDisk}/${Journal.fileName(task)}`)
          assert.deepStrictEqual(memory.journals.bytes(file), fromDisk)

          const readBack = yield* Journal.readEntries({ folder: inMemory, task }).pipe(
            Effect.provideService(JournalStorage.JournalDurability, memory)
          )
          assert.deepStrictEqual(readBack, yield* Journal.readEntries({ folder: onDisk, task }))
          // Reopened from the store, the journal goes on where it was.
          const state = yield* Effect.scoped(
            Effect.gen(function* () {
              const journal = yield* Journal.open({ folder: inMemory, task })
              yield* journal.openTurn
              return yield* journal.state
            })
          ).pipe(Effect.provideService(JournalStorage.JournalDurability, memory))
          assert.strictEqual(state.turns.length, 2)
          assert.strictEqual(state.entries, readBack.length + 1)
        }).pipe(Effect.provide(NodeServices.layer))
    )

    it.effect("negative control: the byte comparison tells two different turns apart", () =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const onDisk = yield* fs.makeTempDirectoryScoped({ prefix: "tessera-" })
        const memory = JournalStorage.memoryOnly()
        yield* turnOn([[true]], JournalStorage.perEntry, onDisk)
        yield* turnOn([[true], [true]], memory, onDisk)
        const file = `${onDisk}/${Journal.fileName(task)}`
        const fromDisk = yield* fs.readFile(file)
        const fromMemory = memory.journals.bytes(file)
        assert.isDefined(fromMemory)
        assert.notDeepEqual(fromMemory, fromDisk)
      }).pipe(Effect.provide(NodeServices.layer))
    )

    it.effect(
      "memory_only_store_is_minted: a hand-built memory-only choice is refused before anything is journaled, naming the constructor",
      () =>
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const folder = yield* fs.makeTempDirectoryScoped({ prefix: "tessera-" })
          const forged = {
            _tag: "MemoryOnly",
            journals: { files: () => [], bytes: () => undefined }
          } as unknown as JournalStorage.Durability
          const exit = yield* Effect.exit(
            Effect.scoped(Journal.open({ folder, task })).pipe(
              Effect.provideService(JournalStorage.JournalDurability, forged)
            )
          )
          assert.isTrue(Exit.isFailure(exit))
          if (Exit.isFailure(exit)) assert.match(String(exit.cause), /JournalStorage\.memoryOnly\(\)/)
          const unknown = yield* Effect.exit(
            Effect.scoped(Journal.open({ folder, task })).pipe(
              Effect.provideService(JournalStorage.JournalDurability, {
                _tag: "Eventually"
              } as unknown as JournalStorage.Durability)
            )
          )
          assert.isTrue(Exit.isFailure(unknown))
          if (Exit.isFailure(unknown)) assert.match(String(unknown.cause), /unknown journal durability "Eventually"/)
          assert.deepStrictEqual(yield* fs.readDirectory(folder), [])
        }).pipe(Effect.provide(NodeServices.layer))
    )
  })
})

/** Asks for one harmless call, then answers. */
const scriptedModel = Layer.unwrap(
  Effect.sync(() => {
    let requests = 0
    return Model.layerFromGenerate(() =>
      Effect.sync(() => {
        requests++
        return requests === 1
          ? Model.response({ toolCalls: [Model.toolCall("c1", "idem", { id: "c1" })] })
          : Model.response({ text: "done" })
      })
    )
  })
)
