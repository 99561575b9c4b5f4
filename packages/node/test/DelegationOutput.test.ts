/**
 * The output binding of a delegation: a child publishes into its own output
 * volume with the `publish` tool (and nowhere else), the parent's call reads
 * each published file back, believes it only when it is what the child's
 * journal recorded, and hands the model a pointer to its own copy. Controls
 * run the same scenarios on deliberately broken wiring or input.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactPointer } from "@tessera/artifacts"
import { Inspector, NodeTessera } from "@tessera/node"
import { Delegation, History, type JournalEntry, Model, TaskExecution, Tool, VolumeStore } from "@tessera/runtime"
import { ScriptedModel } from "@tessera/runtime/testing"
import { Effect, Option, Schema } from "effect"
import * as fc from "fast-check"
import { sharingHarness } from "./support/sharingHarness.ts"
import { taskId, tempDir } from "./support/temp.ts"

const privateMarker = "SCOUT-PRIVATE-91bd"
const publishedMarker = "FINDINGS-PUBLIC-2e07"
const fetchNotes = Tool.make({
  name: "fetch_notes",
  description: "Fetches the field notes",
  input: Schema.Struct({}),
  handler: () => Effect.succeed(`${publishedMarker}\n${"reading 17.2 nominal\n".repeat(1_500)}`)
})

const keepDiary = Tool.make({
  name: "keep_diary",
  description: "Writes the scout's diary",
  input: Schema.Struct({}),
  handler: () => Effect.succeed(`${privateMarker}\n${"dear diary\n".repeat(1_500)}`)
})

const isParent = (request: Model.ModelRequest) => request.tools.some((tool) => tool.name === Delegation.toolName)
const resultOf = (request: Model.ModelRequest | undefined, callId: string) =>
  request?.parts.find((part): part is Model.ToolResultPart => part._tag === "ToolResult" && part.callId === callId)

/** Every file below `root`, relative, with its text. */
const filesBelow = (root: string): ReadonlyMap<string, string> =>
  new Map(
    fs.existsSync(root)
      ? fs
          .readdirSync(root, { recursive: true, withFileTypes: true })
          .filter((entry) => entry.isFile())
          .map((entry) => {
            const file = path.join(entry.parentPath, entry.name)
            return [path.relative(root, file), fs.readFileSync(file, "utf8")] as const
          })
      : []
  )

/**
 * The scout reads its notes (large: offloaded to its private volume), publishes them by their pointer and a
 * short text of its own, and answers; `tamper`, when given, runs between its last publication and its answer.
 * The parent delegates, then reads the copy of the published text by the pointer its result carries.
 */
const publishingModel = ScriptedModel.layer((request) => {
  if (isParent(request)) {
    const delegated = resultOf(request, "d1")
    if (delegated === undefined) {
      return Model.response({
        toolCalls: [
          Model.toolCall("d1", Delegation.toolName, { tasks: [{ agent: "scout", task: "Survey the site." }] })
        ]
      })
    }
    const read = resultOf(request, "r1")
    if (read === undefined) {
      const summary = ArtifactPointer.extractPaths(delegated.content).find((found) => found.endsWith("summary.md"))
      return Model.response({ toolCalls: [Model.toolCall("r1", "read_artifact", { path: summary ?? "missing" })] })
    }
    return Model.response({ text: "read it" })
  }
  const notes = resultOf(request, "n1")
  if (notes === undefined) {
    return Model.response({
      toolCalls: [Model.toolCall("n1", "fetch_notes", {}), Model.toolCall("k1", "keep_diary", {})]
    })
  }
  if (resultOf(request, "p1") === undefined) {
    const pointer = ArtifactPointer.extractPaths(notes.content)[0] ?? "missing"
    return Model.response({
      toolCalls: [Model.toolCall("p1", Delegation.publishToolName, { name: "notes.txt", artifact: pointer })]
    })
  }
  if (resultOf(request, "p2") === undefined) {
    return Model.response({
      toolCalls: [
        Model.toolCall("p2", Delegation.publishToolName, {
          name: "summary.md",
          text: `${publishedMarker}: all readings nominal.`
        })
      ]
    })
  }
  if (resultOf(request, "t1") === undefined && request.tools.some((tool) => tool.name === "tamper")) {
    return Model.response({ toolCalls: [Model.toolCall("t1", "tamper", {})] })
  }
  return Model.response({ text: "scout: surveyed." })
})

/** A tool with the file system that rewrites the child's published summary behind the journal's back. */
const tamperWith = (stateDir: string) =>
  Tool.make({
    name: "tamper",
    description: "Edits a published file in place",
    input: Schema.Struct({}),
    handler: () =>
      Effect.sync(() => {
        const volumes = path.join(stateDir, "delegation", VolumeStore.volumesFolder)
        const output = fs.readdirSync(volumes).find((volume) => volume.endsWith("-output")) ?? "missing"
        const file = path.join(volumes, output, VolumeStore.artifactFolder, "published", "summary.md")
        fs.writeFileSync(file, "forged: the readings failed")
        return "edited"
      })
  })

const run = (stateDir: string, options: { readonly tamper?: boolean; readonly sharing?: boolean } = {}) =>
  Effect.scoped(
    Effect.gen(function* () {
      const tessera = yield* NodeTessera.open({
        folder: stateDir,
        namespace: "delegation",
        agent: "lead",
        redactor: Option.none()
      })
      const scout: Delegation.ChildAgent = {
        agent: "scout",
        description: "surveys the site",
        tools: options.tamper === true ? [fetchNotes, keepDiary, tamperWith(stateDir)] : [fetchNotes, keepDiary]
      }
      const outcome =
        options.sharing === true
          ? yield* tessera.harness.withTask(tessera.harness.runtime.scope.task, (parent) =>
              Effect.gen(function* () {
                const delegate = yield* Delegation.tool(sharingHarness(tessera.harness), parent, [scout])
                return yield* TaskExecution.runTurn(parent, History.make([Model.text("user", "Survey it.")]), {
                  tools: Tool.registry(delegate),
                  maxSteps: 6,
                  durable: true,
                  offload: TaskExecution.defaultFrontDoorOffload
                })
              })
            )
          : yield* tessera.run("plan-1", "Survey it.", { children: [scout] })
      const requests = yield* (yield* ScriptedModel.ScriptedModelRecorder).requests
      const entries = yield* tessera.entries(options.sharing === true ? tessera.harness.runtime.scope.task : "plan-1")
      return { outcome, requests, entries, folder: tessera.folder }
    })
  ).pipe(Effect.provide(publishingModel), Effect.provide(NodeTessera.layer))

describe("delegation output binding", () => {
  it.effect(
    "delegation_publishes_through_the_output_binding: what the child publishes lands in its output volume, the parent gets pointers to its own copies and reads them; the child's private content stays out",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { entries, folder, requests } = yield* run(stateDir)
        const delegated = entries.find(
          (entry): entry is JournalEntry.Entry & { readonly _tag: "ChildDelegated" } => entry._tag === "ChildDelegated"
        )
        if (delegated === undefined) return assert.fail("no delegation")
        const volumes = path.join(folder, VolumeStore.volumesFolder)
        const ids = Delegation.childVolumes(delegated.task)
        // The delegation names the child's output binding; the child's answer records what it published.
        assert.strictEqual(delegated.output?.volume, ids.output)
        const answered = entries.find((entry) => entry._tag === "ChildAnswered")
        assert.deepStrictEqual(answered?._tag === "ChildAnswered" ? answered.published?.map((file) => file.name) : [], [
          "notes.txt",
          "summary.md"
        ])
        // The output volume holds exactly the two publications, nothing of the child's private work.
        const published = filesBelow(path.join(volumes, ids.output))
        assert.deepStrictEqual([...published.keys()].sort(), [
          path.join(VolumeStore.artifactFolder, "published", "notes.txt"),
          path.join(VolumeStore.artifactFolder, "published", "summary.md")
        ])
        // The parent's copies live in its own private volume, under the child's name.
        const copies = [...filesBelow(path.join(volumes, "lead-scratch")).keys()].filter((file) =>
          file.includes(`delegated${path.sep}${delegated.task}`)
        )
        assert.lengthOf(copies, 2)
        const parentRequests = requests.filter(isParent)
        const last = JSON.stringify(parentRequests.at(-1)?.parts)
        // The inspector names what each child published.
        const report = yield* Inspector.inspect(folder, { task: taskId("plan-1") }).pipe(
          Effect.provide(NodeTessera.layer)
        )
        assert.match(
          Inspector.render(report),
          /\(agent scout\): Answered, tokens [a-z ]+, published notes\.txt, summary\.md/
        )
        const json = Inspector.toJson(report).tasks.find((task) => task.task === "plan-1")
        assert.deepStrictEqual(json?.children[0]?.published, ["notes.txt", "summary.md"])
        // The parent read its copy of the summary by the pointer it was given.
        const read = resultOf(parentRequests.at(-1), "r1")
        assert.isFalse(read?.isError, read?.content)
        assert.include(read?.content, `${publishedMarker}: all readings nominal.`)
        assert.include(last, "published summary.md")
        for (const request of parentRequests)
          assert.notInclude(JSON.stringify(request.parts), "reading 17.2 nominal\\nreading")
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_publishes_through_the_output_binding negative control: a host that runs the child as one of the parent's own tasks binds it the host's shared output volume, not one of its own, and its diary lands in the parent's volume",
    () =>
      Effect.gen(function* () {
        const { entries, folder } = yield* run(yield* tempDir, { sharing: true })
        const delegated = entries.find(
          (entry): entry is JournalEntry.Entry & { readonly _tag: "ChildDelegated" } => entry._tag === "ChildDelegated"
        )
        if (delegated === undefined) return assert.fail("no delegation")
        assert.notStrictEqual(delegated.output?.volume, Delegation.childVolumes(delegated.task).output)
        const parentFiles = filesBelow(path.join(folder, VolumeStore.volumesFolder, "lead-scratch"))
        assert.isTrue([...parentFiles.values()].some((text) => text.includes(privateMarker)))
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_published_file_is_checked_against_the_journal: a published file changed behind the journal's back fails the parent's call PublishedArtifactChanged, and its forged bytes reach no parent request or volume",
    () =>
      Effect.gen(function* () {
        const stateDir = yield* tempDir
        const { folder, requests } = yield* run(stateDir, { tamper: true })
        const parentRequests = requests.filter(isParent)
        const delegated = resultOf(parentRequests[1], "d1")
        assert.isTrue(delegated?.isError)
        assert.include(delegated?.content, "is not what its journal recorded")
        for (const request of parentRequests) assert.notInclude(JSON.stringify(request.parts), "forged")
        const parentFiles = filesBelow(path.join(folder, VolumeStore.volumesFolder, "lead-scratch"))
        assert.isFalse([...parentFiles.values()].some((text) => text.includes("forged")))
      }).pipe(Effect.scoped)
  )

  it.effect(
    "delegation_published_file_is_checked_against_the_journal negative control: the same run left untampered passes the check, so the refusal above is the check's",
    () =>
      Effect.gen(function* () {
        const { requests } = yield* run(yield* tempDir)
        const delegated = resultOf(requests.filter(isParent)[1], "d1")
        assert.isFalse(delegated?.isError)
      }).pipe(Effect.scoped)
  )
})

/** A child that publishes one text under `name` and answers; the parent delegates once. */
const namingModel = (name: string) =>
  ScriptedModel.layer((request) => {
    if (isParent(request)) {
      return resultOf(request, "d1") === undefined
        ? Model.response({
            toolCalls: [Model.toolCall("d1", Delegation.toolName, { tasks: [{ agent: "scout", task: "Name it." }] })]
          })
        : Model.response({ text: "done" })
    }
    return resultOf(request, "p1") === undefined
      ? Model.response({ toolCalls: [Model.toolCall("p1", Delegation.publishToolName, { name, text: "NAMED" })] })
      : Model.response({ text: "named" })
  })

/** Names a hostile model may ask for: climbs, absolute paths, folders, hidden files, long and odd strings. */
const hostileName = fc.oneof(
  fc.constantFrom("../escape.txt", "/etc/passwd", "a/b.txt", ".hidden", "..", ".", "ok.txt", "x".repeat(129), "C:\\x"),
  fc.string({ maxLength: 12 }),
  fc
    .array(fc.constantFrom("a", "0", ".", "-", "_", "/", "\\", "..", "é", " ", "\u0000"), { maxLength: 8 })
    .map((parts) => parts.join(""))
)

/** One publication under `name` on a fresh namespace, and the check that it landed only where it may. */
const publishesOnlyInItsBinding = async (name: string, sharing: boolean) => {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "tessera-publish-"))
  try {
    const outcome = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const tessera = yield* NodeTessera.open({
            folder: stateDir,
            agent: "lead",
            redactor: Option.none()
          })
          const offers = [{ agent: "scout", description: "names" }]
          if (sharing) {
            yield* tessera.harness.withTask(tessera.harness.runtime.scope.task, (parent) =>
              Effect.gen(function* () {
                const delegate = yield* Delegation.tool(sharingHarness(tessera.harness), parent, offers)
                return yield* TaskExecution.runTurn(parent, History.make([Model.text("user", "Name it.")]), {
                  tools: Tool.registry(delegate),
                  maxSteps: 4,
                  durable: true,
                  offload: TaskExecution.defaultFrontDoorOffload
                })
              })
            )
          } else yield* tessera.run("plan-1", "Name it.", { children: offers })
          const requests = yield* (yield* ScriptedModel.ScriptedModelRecorder).requests
          return { folder: tessera.folder, requests }
        })
      ).pipe(Effect.provide(namingModel(name)), Effect.provide(NodeTessera.layer))
    )
    const published = [...filesBelow(outcome.folder)].filter(([, text]) => text === "NAMED").map(([file]) => file)
    const result = outcome.requests.map((request) => resultOf(request, "p1")).find((part) => part !== undefined)
    if (result?.isError === true) {
      assert.include(result.content, "cannot publish")
      assert.deepStrictEqual(published, [])
    } else {
      // The publication in the child's output volume, and the parent's copy in its own private volume.
      const placed = published.map((file) => file.split(path.sep)).sort((a, b) => a.length - b.length)
      assert.lengthOf(placed, 2)
      const [output, copy] = placed
      assert.deepStrictEqual(output?.slice(-3), [VolumeStore.artifactFolder, "published", name])
      assert.isTrue(output?.at(-4)?.endsWith("-output"))
      assert.deepStrictEqual(copy?.slice(-5, -2), ["lead-scratch", VolumeStore.artifactFolder, "delegated"])
      assert.strictEqual(copy?.at(-1), name)
    }
  } finally {
    fs.rmSync(stateDir, { recursive: true, force: true })
  }
}

describe("delegation publish names", () => {
  it.live(
    "delegation_publish_stays_in_its_binding: whatever name a child asks for, a file appears only at published/<name> of its own output volume, or the call is refused PublishRefused and nothing appears",
    () =>
      Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(hostileName, (name) => publishesOnlyInItsBinding(name, false)),
          { numRuns: 60 }
        )
      )
  )

  it.live(
    "delegation_publish_stays_in_its_binding negative control: run as one of the parent's own tasks (the shared output volume), a name the property accepts lands outside the child's own binding, and the check fails",
    () =>
      Effect.promise(async () => {
        await publishesOnlyInItsBinding("ok.txt", false)
        const failed = await publishesOnlyInItsBinding("ok.txt", true).then(
          () => false,
          () => true
        )
        assert.isTrue(failed)
      })
  )
})
