/**
 * The guarantees against a hostile (or careless) caller, through the public
 * API only: casts stand in for unchecked input, as a plugin produces it.
 *
 * Every attack asserts the same four things: a typed refusal, zero model
 * requests (counted by a model layer written here), zero journal bytes, and
 * an unchanged store tree (snapshotted before and after). Each class has a
 * negative control: the same scenario with the forged or foreign piece
 * replaced by the genuine one writes, and the same check flags it, so the
 * check can fail and the refusal is due to the forgery.
 *
 * These tests live in the node package because they need real durable
 * files; the dependency points the right way from here.
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as nodePath from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { DefaultRedactor } from "@tessera/artifacts"
import { HostAuthority, Ids, Volume } from "@tessera/core"
import { JournalForbiddingHost, NodeDurableFiles } from "@tessera/node"
import {
  Compaction,
  EntryGate,
  FilesystemTaskRuntime,
  History,
  Journal,
  Model,
  PrivateSummaries,
  TaskExecution,
  TaskHost,
  Tool,
  ToolResults
} from "@tessera/runtime"
import { Effect, Layer, Option, Schema, type Scope } from "effect"
import * as fc from "fast-check"

const id = {
  agent: Schema.decodeUnknownSync(Ids.AgentId),
  task: Schema.decodeUnknownSync(Ids.TaskId),
  volume: Schema.decodeUnknownSync(Ids.VolumeId),
  operation: Schema.decodeUnknownSync(Ids.OperationId)
}
const agentX = id.agent("agent-x")
const agentY = id.agent("agent-y")

const platform = Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer, HostAuthority.permissive)

const tempDir = (): string => fs.mkdtempSync(nodePath.join(os.tmpdir(), "tessera-hostile-"))

/** Every file and folder under `root` with a digest of its bytes. */
const snapshot = (root: string): ReadonlyMap<string, string> => {
  const out = new Map<string, string>()
  const walk = (folder: string) => {
    for (const entry of fs.readdirSync(folder, { withFileTypes: true })) {
      const full = nodePath.join(folder, entry.name)
      const relative = nodePath.relative(root, full)
      if (entry.isDirectory()) {
        out.set(`${relative}/`, "dir")
        walk(full)
      } else out.set(relative, crypto.createHash("sha256").update(fs.readFileSync(full)).digest("hex"))
    }
  }
  walk(root)
  return out
}

const changes = (before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): ReadonlyArray<string> => {
  const names = new Set([...before.keys(), ...after.keys()])
  return [...names].filter((name) => before.get(name) !== after.get(name)).sort()
}

/** A store with two agents' private volumes, a journal volume and an output volume. */
const makeArena = (root: string) =>
  Effect.gen(function* () {
    const host = yield* TaskHost.open({ root })
    const create = (name: string, kind: Volume.VolumeKind, owner: Volume.Owner) =>
      host.store.create({ id: id.volume(name), kind, owner })
    const privX = yield* create("private-x", "AgentPrivate", Volume.agentOwner(agentX))
    const privY = yield* create("private-y", "AgentPrivate", Volume.agentOwner(agentY))
    const journalRef = yield* create("journal", "Journal", Volume.hostOwner)
    const outputRef = yield* create("output", "Output", Volume.hostOwner)
    const journalFolder = yield* host.store.folderOf(journalRef)
    /** A runtime for `agent` whose private volume is `privateRef`, and a task bound to it. */
    const taskOn = (
      agent: Ids.AgentId,
      task: string,
      privateRef: Volume.VolumeRef,
      access: ReadonlyArray<"read" | "write"> = ["read", "write"]
    ) =>
      Effect.gen(function* () {
        const runtimeScope = yield* host.issueScope(
          id.task(`${task}-runtime`),
          [{ volume: privateRef, access: ["read", "write"] }],
          agent
        )
        const runtime = yield* FilesystemTaskRuntime.fromHost(host, {
          private: Option.some(privateRef),
          scope: runtimeScope
        })
        const scope = yield* host.issueScope(id.task(task), [{ volume: privateRef, access }], agent)
        const context = yield* runtime.bindTask({ scope, output: Option.none() })
        return { runtime, context }
      })
    return { root: host.store.root, host, privX, privY, journalRef, outputRef, journalFolder, taskOn }
  })

type Arena = Effect.Success<ReturnType<typeof makeArena>>

/** A model layer that counts what reaches it and answers summaries with a fixed text. */
const countingModel = (
  answer: (request: Model.ModelRequest) => Model.ModelResponse = () => Model.response({ text: "a summary" })
) => {
  const sent: Array<Model.ModelRequest> = []
  return {
    sent,
    layer: Model.layerFromGenerate((request) =>
      Effect.sync(() => {
        sent.push(request)
        return answer(request)
      })
    )
  }
}

const produce = Tool.make({
  name: "produce",
  description: "Produces a result of the given size",
  input: Schema.Struct({ size: Schema.Int }),
  handler: ({ size }) => Effect.succeed("r".repeat(size))
})
const tools = Tool.registry(produce)

const longHistory = (rounds: number, size: number): History.History =>
  Array.from({ length: rounds }, (_, i) => i).reduce(
    (history, i) =>
      History.append(history, [
        Model.toolCall(`c${i}`, "produce", { size }),
        Model.toolResult({ callId: `c${i}`, name: "produce", content: "x".repeat(size), isError: false })
      ]),
    History.make([Model.text("user", "Do the work.")])
  )

const policy = Compaction.threshold({ measure: "bytes", limit: 2_000, keepRecent: 0, pieceLimit: 1_000 })

interface Verdict {
  readonly error:
    | { readonly _tag: string; readonly reason?: string; readonly field?: string; readonly message: string }
    | undefined
  readonly requests: number
  readonly journalBytes: number
  readonly changed: ReadonlyArray<string>
}

/**
 * Runs `attack` with the task's journal and a counting model in scope, and
 * reports what it cost: the error (if any), requests, journal bytes of
 * `task`, and what changed in the store tree.
 */
const cost = <A, E, R>(
  arena: Arena,
  task: string,
  attack: Effect.Effect<A, E, R>,
  model = countingModel()
): Effect.Effect<Verdict, never, Exclude<R, Journal.Journal | Model.Model> | Layer.Success<typeof platform>> =>
  Effect.gen(function* () {
    const before = snapshot(arena.root)
    const exit = yield* Effect.exit(
      attack.pipe(
        Effect.provide(Layer.merge(model.layer, Journal.layer({ folder: arena.journalFolder, task: id.task(task) })))
      )
    )
    const file = nodePath.join(arena.journalFolder, Journal.fileName(id.task(task)))
    const error =
      exit._tag === "Failure"
        ? ((exit.cause.reasons.find((reason) => reason._tag === "Fail")?.error ?? {
            _tag: "Defect",
            message: String(exit.cause)
          }) as Verdict["error"])
        : undefined
    return {
      error,
      requests: model.sent.length,
      journalBytes: fs.existsSync(file) ? fs.statSync(file).size : 0,
      changed: changes(before, snapshot(arena.root))
    }
  }) as never

/** The four assertions of every attack. */
const assertRefused = (verdict: Verdict, tag: string, reasonOrField?: string) => {
  assert.isDefined(verdict.error, "the attack was not refused")
  assert.strictEqual(verdict.error?._tag, tag, verdict.error?.message)
  if (reasonOrField !== undefined) {
    assert.strictEqual(verdict.error?.reason ?? verdict.error?.field, reasonOrField, verdict.error?.message)
  }
  assert.strictEqual(verdict.requests, 0, "model requests were sent")
  assert.strictEqual(verdict.journalBytes, 0, "the journal was written")
  assert.deepStrictEqual(verdict.changed, [], "the store tree changed")
}

/** What a negative control expects: the check above fails on this verdict. */
const assertCheckFails = (verdict: Verdict, tag: string, reasonOrField?: string) =>
  assert.throws(() => assertRefused(verdict, tag, reasonOrField))

const inArena = <A, E>(body: (arena: Arena) => Effect.Effect<A, E, Layer.Success<typeof platform>>) => {
  const dir = tempDir()
  return Effect.runPromise(
    makeArena(dir).pipe(
      Effect.flatMap(body),
      Effect.provide(platform),
      Effect.ensuring(Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
    ) as Effect.Effect<A>
  )
}

const compactWith = (capability: PrivateSummaries.PrivateWriterCapability, operation: string) =>
  Effect.gen(function* () {
    const journal = yield* Journal.Journal
    return yield* Compaction.compact({
      history: longHistory(4, 1_500),
      policy,
      operation: id.operation(operation),
      step: 1,
      journal: Option.some(journal)
    }).pipe(PrivateSummaries.provide(capability))
  })

describe("hostile caller: objects the guards trust are minted and checked by identity", () => {
  it("a spread copy of a genuine task context (another agent, created content, hand-written scope) gets no capability", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const x = yield* arena.taskOn(agentX, "task-x", arena.privX)
        const forgedScope = {
          task: x.context.task,
          agent: agentY,
          grants: [{ task: x.context.task, volume: arena.privY, access: ["write"] }]
        }
        const copy = { ...x.context, agent: agentY, createdPrivate: [arena.privY], scope: forgedScope } as never
        const resolveCopy = cost(arena, "task-x", PrivateSummaries.resolve(copy))
        assertRefused(yield* resolveCopy, "Unauthorized", "NotMinted")
        const turnCopy = cost(
          arena,
          "task-x",
          EntryGate.bind(copy).pipe(
            Effect.flatMap((binding) => TaskExecution.runTurn(binding, longHistory(4, 1_500), { tools, maxSteps: 2 }))
          )
        )
        assertRefused(yield* turnCopy, "Unauthorized", "NotMinted")
        // Negative control: the genuine context compacts into its own volume, and the check flags the write.
        const genuine = cost(
          arena,
          "task-x",
          EntryGate.bind(x.context, { policy }).pipe(
            Effect.flatMap((binding) => TaskExecution.summarize(binding, longHistory(4, 1_500)))
          )
        )
        assertCheckFails(yield* genuine, "Unauthorized", "NotMinted")
      })
    ))

  it("a hand-built scope is refused at bindTask; a hand-built binding and a hand-built offload target at their entries", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const x = yield* arena.taskOn(agentX, "task-x", arena.privX)
        const handScope = {
          task: id.task("task-h"),
          agent: agentX,
          grants: [{ task: id.task("task-h"), volume: arena.privX, access: ["read", "write"] as const }]
        }
        assertRefused(
          yield* cost(arena, "task-h", x.runtime.bindTask({ scope: handScope })),
          "Unauthorized",
          "ScopeNotIssued"
        )

        const handBinding = { context: x.context, policy }
        const turn = TaskExecution.runTurn(handBinding, longHistory(4, 1_500), { tools, maxSteps: 2 })
        assertRefused(yield* cost(arena, "task-x", turn), "Unauthorized", "NotMinted")

        const handTarget = {
          destination: "Private" as const,
          volume: arena.privY,
          root: nodePath.join(arena.root, "volumes", "private-y", "artifacts"),
          task: x.context.task,
          storeRoot: arena.root
        }
        const hooks = Effect.flatMap(Journal.Journal, (journal) =>
          ToolResults.offloadHooks(
            { threshold: 10, readTool: "read_artifact", destination: "Private" },
            handTarget,
            journal
          )
        ).pipe(PrivateSummaries.provide(yield* PrivateSummaries.resolve(x.context)))
        assertRefused(yield* cost(arena, "task-x", hooks), "Unauthorized", "NotMinted")

        // Negative control: the genuine binding runs its turn (requests, journal, files): the check flags it.
        const genuine = EntryGate.bind(x.context, { policy }).pipe(
          Effect.flatMap((binding) => TaskExecution.runTurn(binding, longHistory(4, 1_500), { tools, maxSteps: 2 }))
        )
        assertCheckFails(
          yield* cost(
            arena,
            "task-x",
            genuine,
            countingModel(() => Model.response({ text: "done" }))
          ),
          "Unauthorized"
        )
      })
    ))
})

describe("hostile caller: the read tool reads only for a genuine context", () => {
  it("a copied context (with a hand-written scope granting another agent's volume) reads nothing; the genuine one reads its artifact", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const x = yield* arena.taskOn(agentX, "task-x", arena.privX)
        const capX = yield* PrivateSummaries.resolve(x.context)
        const artifacts = nodePath.join(capX.folder, "artifacts", "tool-results")
        fs.mkdirSync(artifacts, { recursive: true })
        fs.writeFileSync(nodePath.join(artifacts, "r.txt"), "the body")
        const y = yield* arena.taskOn(agentY, "task-y", arena.privY)
        const forgedScope = {
          ...y.context.scope,
          grants: [{ task: y.context.task, volume: arena.privX, access: ["read"] }]
        }
        const copy = { ...y.context, agent: agentX, scope: forgedScope } as never
        const refused = yield* Effect.flip(ToolResults.readArtifact(copy, { path: "tool-results/r.txt" }))
        assert.strictEqual(refused._tag, "ArtifactReadRefused")
        assert.include(refused.message, "NotMinted")
        // Negative control: the genuine context reads the same path.
        const genuine = yield* ToolResults.readArtifact(x.context, { path: "tool-results/r.txt" })
        assert.include(genuine.text, "the body")
      })
    ))
})

describe("hostile caller: a capability is bound to the runtime, task and agent it was minted for", () => {
  it("cross-task, cross-agent, read-grant and cross-store reuse of a genuine capability is CapabilityMismatch before any request", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const x = yield* arena.taskOn(agentX, "task-x", arena.privX)
        const capX = yield* PrivateSummaries.resolve(x.context)
        // Agent Y's task (another runtime, another private volume) handed X's capability.
        yield* arena.taskOn(agentY, "task-y", arena.privY)
        assertRefused(
          yield* cost(arena, "task-y", compactWith(capX, "cross-agent")),
          "Unauthorized",
          "CapabilityMismatch"
        )
        // A task of the same agent that holds only a read grant.
        const reader = yield* arena.taskOn(agentX, "task-r", arena.privX, ["read"])
        const readerResolve = yield* Effect.flip(PrivateSummaries.resolve(reader.context))
        assert.strictEqual(
          readerResolve._tag === "Unauthorized" ? readerResolve.reason : readerResolve._tag,
          "NoPrivateWriter"
        )
        assertRefused(
          yield* cost(arena, "task-r", compactWith(capX, "read-grant")),
          "Unauthorized",
          "CapabilityMismatch"
        )
        // The hook constructor refuses it too, before a turn could send anything.
        const hooks = Effect.flatMap(Journal.Journal, (journal) =>
          TaskExecution.compactionHooks(policy, journal).pipe(PrivateSummaries.provide(capX))
        )
        assertRefused(yield* cost(arena, "task-y", hooks), "Unauthorized", "CapabilityMismatch")
        // Another store whose task has the same id: the journal is not this store's.
        const other = tempDir()
        try {
          const otherArena = yield* makeArena(other)
          assertRefused(
            yield* cost(otherArena, "task-x", compactWith(capX, "cross-store")),
            "Unauthorized",
            "CapabilityMismatch"
          )
        } finally {
          fs.rmSync(other, { recursive: true, force: true })
        }
        // Negative control: the same capability with its own task's journal summarizes and stages.
        assertCheckFails(yield* cost(arena, "task-x", compactWith(capX, "own")), "Unauthorized", "CapabilityMismatch")
      })
    ))

  it("a forged capability (a cast) or none at all is refused NotMinted by compaction before the first summary request", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        yield* arena.taskOn(agentX, "task-x", arena.privX)
        const forged = {
          volume: arena.privX,
          folder: nodePath.join(arena.root, "volumes", "private-x"),
          task: id.task("task-x"),
          agent: agentX
        } as never
        assertRefused(yield* cost(arena, "task-x", compactWith(forged, "forged")), "Unauthorized", "NotMinted")
        assertRefused(
          yield* cost(arena, "task-x", compactWith(undefined as never, "none")),
          "Unauthorized",
          "NotMinted"
        )
      })
    ))

  it("a capability whose volume was re-registered with another owner is VolumeChanged at write time (staging and private offload)", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const x = yield* arena.taskOn(agentX, "task-x", arena.privX)
        const capX = yield* PrivateSummaries.resolve(x.context)
        const meta = nodePath.join(arena.root, "meta", "volumes", "private-x.json")
        const original = fs.readFileSync(meta, "utf8")
        fs.writeFileSync(meta, original.replace("agent-x", "agent-y"))
        const staged = PrivateSummaries.stageOnce({ operation: id.operation("changed"), step: 1 }, "text").pipe(
          PrivateSummaries.provide(capX)
        )
        assertRefused(yield* cost(arena, "task-x", staged), "Unauthorized", "VolumeChanged")
        // A private offload target made before the change: the write admits the capability in scope again.
        fs.writeFileSync(meta, original)
        const target = yield* ToolResults.privateTarget.pipe(PrivateSummaries.provide(capX))
        fs.writeFileSync(meta, original.replace("agent-x", "agent-y"))
        const offloadOnce = Effect.gen(function* () {
          const journal = yield* Journal.Journal
          const config = { threshold: 10, readTool: "read_artifact", destination: "Private" as const }
          return yield* ToolResults.offloadResult(
            config,
            target,
            journal,
            { task: x.context.task, turn: 1, step: 1, call: Model.toolCall("c1", "produce", { size: 500 }) },
            Model.toolResult({ callId: "c1", name: "produce", content: "z".repeat(500), isError: false })
          )
        }).pipe(PrivateSummaries.provide(capX))
        assertRefused(yield* cost(arena, "task-x", offloadOnce), "Unauthorized", "VolumeChanged")
        // Negative control: with the facts restored, the same staging and the same offload write.
        fs.writeFileSync(meta, original)
        assertCheckFails(yield* cost(arena, "task-x", staged), "Unauthorized", "VolumeChanged")
        assertCheckFails(yield* cost(arena, "task-x", offloadOnce), "Unauthorized", "VolumeChanged")
      })
    ))
})

describe("hostile caller: keys and ids that become paths are decoded first", () => {
  it("path-shaped and non-integer staging keys are InvalidInput naming the key; nothing is written", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const x = yield* arena.taskOn(agentX, "task-x", arena.privX)
        const capX = yield* PrivateSummaries.resolve(x.context)
        const stage = (key: unknown) =>
          PrivateSummaries.stageOnce(key as PrivateSummaries.StagingKey, "text").pipe(PrivateSummaries.provide(capX))
        for (const key of [
          { operation: "../../../../meta/volumes/evil", step: 1 },
          { operation: "op", step: "../../x" },
          { operation: "op", step: 1.5 },
          { operation: "op", step: -1 },
          { operation: "op", step: Number.NaN },
          { operation: "op", step: 0 }
        ]) {
          assertRefused(yield* cost(arena, "task-x", stage(key)), "InvalidInput", "key")
        }
        const binding = yield* EntryGate.bind(x.context, { policy })
        for (const options of [{ step: 1.5 }, { step: -1 }, { operation: "../../evil" }]) {
          const summary = TaskExecution.summarize(binding, longHistory(4, 1_500), options as never)
          assertRefused(yield* cost(arena, "task-x", summary), "InvalidInput", "options")
        }
        // Negative control: a well-formed key stages.
        assertCheckFails(yield* cost(arena, "task-x", stage({ operation: "op", step: 1 })), "InvalidInput", "key")
      })
    ))

  it("a path-shaped task, volume id or capability list is InvalidInput naming the field, with no file outside", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const journal = Effect.scoped(
          Layer.build(Journal.layer({ folder: arena.journalFolder, task: "../../x" as never }))
        )
        const journalError = yield* Effect.flip(journal)
        assert.isTrue(journalError._tag === "InvalidInput" && journalError.field === "task", journalError.message)
        assert.isFalse(fs.existsSync(nodePath.join(arena.journalFolder, "..", "..", "x.jsonl")))
        const created = yield* Effect.flip(
          arena.host.store.create({ id: "../evil" as never, kind: "Scratch", owner: Volume.hostOwner })
        )
        assert.isTrue(created._tag === "InvalidInput" && created.field === "volume", created.message)
        const issued = yield* Effect.flip(arena.host.issueScope("a/b" as never, [], agentX))
        assert.isTrue(issued._tag === "InvalidInput" && issued.field === "task", issued.message)
        const custody = yield* arena.host.store.custody({ store: arena.privX.store, volume: "../meta" as never })
        assert.isTrue(Option.isNone(custody))
        assert.isFalse(fs.existsSync(nodePath.join(arena.root, "evil")))
      })
    ))
})

/** Runs `body` on a journal-forbidding host in a fresh state folder, removed afterwards. */
const onForbiddingHost = <A, E>(
  body: (
    host: JournalForbiddingHost.JournalForbiddingHostService
  ) => Effect.Effect<
    A,
    E,
    Scope.Scope | Layer.Success<typeof NodeServices.layer> | Layer.Success<typeof NodeDurableFiles.layer>
  >
) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const stateDir = tempDir()
        yield* Effect.addFinalizer(() => Effect.sync(() => fs.rmSync(stateDir, { recursive: true, force: true })))
        return yield* body(yield* JournalForbiddingHost.open({ stateDir, namespace: "forbid", agent: agentX }))
      })
    ).pipe(Effect.provide(Layer.merge(NodeServices.layer, NodeDurableFiles.layer))) as Effect.Effect<A>
  )

describe("hostile caller: private folders, refused entries and the runtime's private volume", () => {
  it("VolumeStore.folderOf hands out no agent-private folder (CapabilityRequired); other volumes it still locates", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const refused = yield* Effect.flip(arena.host.store.folderOf(arena.privX))
        assert.isTrue(refused._tag === "Unauthorized" && refused.reason === "CapabilityRequired", refused.message)
        // Negative control: the same call on a host-owned volume returns its folder.
        assert.strictEqual(
          yield* arena.host.store.folderOf(arena.outputRef),
          nodePath.join(arena.root, "volumes", "output")
        )
      })
    ))

  it("a task without its own write grant does not get the runtime's private volume", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const granted = yield* arena.taskOn(agentX, "task-x", arena.privX)
        const bare = yield* granted.runtime.bindTask({
          scope: yield* arena.host.issueScope(id.task("task-bare"), [], agentX),
          output: Option.none()
        })
        const error = yield* Effect.flip(PrivateSummaries.resolve(bare))
        assert.isTrue(error._tag === "Unauthorized" && error.reason === "NoPrivateWriter", error.message)
        assert.include(error.message, "RuntimePrivate")
        assert.include(error.message, "MissingWriteGrant")
        // Its default policy is therefore Disabled; the granted task's is Threshold.
        assert.strictEqual((yield* EntryGate.bind(bare)).policy._tag, "Disabled")
        assert.strictEqual((yield* EntryGate.bind(granted.context)).policy._tag, "Threshold")
      })
    ))

  it("refused entries on the journal-forbidding host create no file at all", () =>
    onForbiddingHost((host) =>
      Effect.gen(function* () {
        const before = snapshot(host.folder)
        const model = countingModel()
        const refused = yield* Effect.flip(
          host.withTask(
            id.task("armed"),
            (binding) =>
              TaskExecution.runTurn(binding, longHistory(4, 1_500), { tools, maxSteps: 2 }).pipe(
                Effect.provide(model.layer)
              ),
            { policy }
          )
        )
        assert.strictEqual(refused._tag, "Unauthorized")
        const writerless = yield* host.withTask(id.task("writerless"), (binding) =>
          Effect.flip(TaskExecution.summarize(binding, longHistory(4, 1_500))).pipe(Effect.provide(model.layer))
        )
        assert.strictEqual(writerless._tag, "Unauthorized")
        assert.strictEqual(model.sent.length, 0)
        assert.deepStrictEqual(changes(before, snapshot(host.folder)), [])
        // Negative control: a task that may write journals its turn, and the tree changes.
        yield* host.withTask(id.task("plain"), (binding) =>
          TaskExecution.runTurn(binding, History.make([Model.text("user", "hi")]), { tools, maxSteps: 2 }).pipe(
            Effect.provide(countingModel(() => Model.response({ text: "hello" })).layer)
          )
        )
        assert.notDeepEqual(changes(before, snapshot(host.folder)), [])
      })
    ))

  it("a task on the journal-forbidding host that creates its own private scratch compacts into it", () =>
    onForbiddingHost((host) =>
      Effect.gen(function* () {
        const model = countingModel()
        const staged = yield* host.withTask(
          id.task("pi-style"),
          (binding) =>
            Effect.gen(function* () {
              assert.strictEqual(binding.policy._tag, "Threshold")
              const capability = yield* PrivateSummaries.resolve(binding.context)
              assert.strictEqual(capability.source, "CreatedPrivate")
              return yield* TaskExecution.summarize(binding, longHistory(4, 1_500))
            }).pipe(Effect.provide(model.layer)),
          { createPrivate: true }
        )
        assert.strictEqual(staged.staged.volume.volume, "pi-style-scratch")
        assert.isTrue(fs.existsSync(staged.staged.absolutePath))
        // Negative control: without creating it, the same task has no writer.
        const refused = yield* Effect.flip(
          host.withTask(id.task("pi-style-2"), (binding) =>
            TaskExecution.summarize(binding, longHistory(4, 1_500)).pipe(Effect.provide(model.layer))
          )
        )
        assert.strictEqual(refused._tag, "Unauthorized")
      })
    ))
})

describe("hostile caller: what a turn persists or reports is scrubbed", () => {
  const secret = `ghp_${"A1b2C3d4E5".repeat(4)}`.slice(0, 40)
  const failing = () =>
    Model.layerFromGenerate(() =>
      Effect.fail(
        new Model.ModelError({ reason: "ProviderFailure", detail: `400: echo of your request: token=${secret}` })
      )
    )

  const failedTurn = (arena: Arena, redact: boolean) =>
    Effect.gen(function* () {
      const x = yield* arena.taskOn(agentX, "task-x", arena.privX)
      const binding = yield* EntryGate.bind(x.context, { policy: Compaction.disabled })
      const turn = TaskExecution.runTurn(binding, History.make([Model.text("user", "go")]), {
        tools,
        maxSteps: 2
      }).pipe(
        Effect.provide(Layer.merge(failing(), Journal.layer({ folder: arena.journalFolder, task: x.context.task })))
      )
      const error = yield* Effect.flip(redact ? turn.pipe(Effect.provide(DefaultRedactor.layer())) : turn)
      const journal = fs.readFileSync(nodePath.join(arena.journalFolder, Journal.fileName(x.context.task)), "utf8")
      return { error, journal }
    })

  it("a provider error carrying a secret reaches neither the journal's ModelFailed nor the error message", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const { error, journal } = yield* failedTurn(arena, true)
        assert.strictEqual(error._tag, "ModelError")
        assert.include(journal, "ModelFailed")
        assert.notInclude(journal, secret)
        assert.notInclude(error.message, secret)
      })
    ))

  it("negative control: with no redactor (the documented verbatim decision) the secret is there, and the check sees it", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const { journal } = yield* failedTurn(arena, false)
        assert.include(journal, secret)
      })
    ))
})

describe("the resolution order and the default policy", () => {
  type Candidate = "created" | "runtime" | "output"
  const order: ReadonlyArray<Candidate> = ["created", "runtime", "output"]
  const sourceOf: Record<Candidate, PrivateSummaries.CapabilitySource> = {
    created: "CreatedPrivate",
    runtime: "RuntimePrivate",
    output: "OutputBinding"
  }

  /** A task of agent X for which exactly the `present` candidates pass the verdict. */
  const contextWith = (arena: Arena, present: ReadonlySet<Candidate>, task: string) =>
    Effect.gen(function* () {
      const make = (name: string) =>
        arena.host.store.create({
          id: id.volume(`${task}-${name}`),
          kind: "AgentPrivate",
          owner: Volume.agentOwner(agentX)
        })
      const created = yield* make("created")
      const runtimeVolume = yield* make("runtime")
      const output = yield* make("output")
      const runtimeScope = yield* arena.host.issueScope(
        id.task(`${task}-rt`),
        [{ volume: runtimeVolume, access: ["write"] }],
        agentX
      )
      const runtime = yield* FilesystemTaskRuntime.fromHost(arena.host, {
        private: Option.some(runtimeVolume),
        scope: runtimeScope
      })
      // A candidate is made to fail by withholding the task's write grant on it (outputs need one to bind at all).
      const grants = [
        ...(present.has("created") ? [created] : []),
        ...(present.has("runtime") ? [runtimeVolume] : []),
        ...(present.has("output") ? [output] : [])
      ].map((volume) => ({ volume, access: ["write" as const] }))
      const scope = yield* arena.host.issueScope(id.task(task), grants, agentX)
      return yield* runtime.bindTask({
        scope,
        createdPrivate: [created],
        output: present.has("output") ? Option.some(output) : Option.none()
      })
    })

  const subsets: ReadonlyArray<ReadonlyArray<Candidate>> = [
    [],
    ["created"],
    ["runtime"],
    ["output"],
    ["created", "runtime"],
    ["created", "output"],
    ["runtime", "output"],
    ["created", "runtime", "output"]
  ]

  it("the first passing candidate wins, in the order created private content, runtime private volume, output binding (every subset)", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        for (const [index, subset] of subsets.entries()) {
          const context = yield* contextWith(arena, new Set(subset), `order-${index}`)
          const resolved = yield* PrivateSummaries.resolveOption(context)
          const expected = order.find((candidate) => subset.includes(candidate))
          assert.strictEqual(
            Option.isSome(resolved) ? resolved.value.source : undefined,
            expected === undefined ? undefined : sourceOf[expected],
            `candidates ${subset.join(",") || "none"}`
          )
          // The default policy is Threshold exactly where the capability resolves.
          assert.strictEqual(
            (yield* EntryGate.bind(context)).policy._tag,
            expected === undefined ? "Disabled" : "Threshold",
            `default for ${subset.join(",") || "none"}`
          )
        }
      })
    ))

  it("negative control: the order with any two candidates swapped disagrees with the resolver on some subset", () => {
    const firstIn = (ranking: ReadonlyArray<Candidate>, subset: ReadonlyArray<Candidate>) =>
      ranking.find((c) => subset.includes(c))
    for (const [i, j] of [
      [0, 1],
      [1, 2],
      [0, 2]
    ] as const) {
      const swapped = [...order]
      ;[swapped[i], swapped[j]] = [swapped[j] as Candidate, swapped[i] as Candidate]
      assert.isTrue(subsets.some((subset) => firstIn(swapped, subset) !== firstIn(order, subset)))
    }
  })
})

describe("gated entries keep what the turn would get", () => {
  it("dispatchTools behind the gate offloads a large result like a turn does", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const x = yield* arena.taskOn(agentX, "task-x", arena.privX)
        const binding = yield* EntryGate.bind(x.context, { policy: Compaction.disabled })
        const offload = { threshold: 10, readTool: "read_artifact", destination: "Private" as const }
        const run = (config: TaskExecution.ExecutionConfig) =>
          Effect.gen(function* () {
            const journal = yield* Journal.Journal
            yield* journal.openTurn
            yield* journal.append({
              _tag: "RequestDispatched",
              turn: 1,
              step: 1,
              parts: 1,
              size: 1,
              sha256: "0".repeat(64)
            })
            yield* journal.append({
              _tag: "ResponseReceived",
              turn: 1,
              step: 1,
              textSize: 0,
              textSha256: "0".repeat(64),
              toolCalls: [{ callId: "c1", name: "produce" }]
            })
            return yield* TaskExecution.dispatchTools(binding, config, { task: x.context.task, turn: 1, step: 1 }, [
              Model.toolCall("c1", "produce", { size: 5_000 })
            ])
          }).pipe(
            Effect.provide(
              Layer.merge(countingModel().layer, Journal.layer({ folder: arena.journalFolder, task: x.context.task }))
            )
          )
        const [offloaded] = yield* run({ tools, maxSteps: 2, offload })
        assert.isBelow(offloaded?.content.length ?? Infinity, 1_000)
        assert.include(offloaded?.content ?? "", "read_artifact")
        // Negative control: the same dispatch without offload keeps the 5,000 bytes inline.
        fs.rmSync(nodePath.join(arena.journalFolder, Journal.fileName(x.context.task)))
        const [inline] = yield* run({ tools, maxSteps: 2 })
        assert.strictEqual(inline?.content.length, 5_000)
      })
    ))
})

describe("property: only the matching genuine capability writes", () => {
  type Consumer = "compact" | "publish" | "hooks" | "privateTarget"
  type Origin = "genuine" | "otherTask" | "otherAgent" | "forged" | "copied"

  it("over consumer x capability origin x task (2,000 runs): a write happens exactly for the genuine capability of the running task", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const x = yield* arena.taskOn(agentX, "task-x", arena.privX)
        const x2 = yield* arena.taskOn(agentX, "task-x2", arena.privX)
        const y = yield* arena.taskOn(agentY, "task-y", arena.privY)
        const caps = {
          x: yield* PrivateSummaries.resolve(x.context),
          x2: yield* PrivateSummaries.resolve(x2.context),
          y: yield* PrivateSummaries.resolve(y.context)
        }
        const runs = { n: 0 }
        const property = fc.asyncProperty(
          fc.constantFrom<Consumer>("compact", "publish", "hooks", "privateTarget"),
          fc.constantFrom<Origin>("genuine", "otherTask", "otherAgent", "forged", "copied"),
          fc.constantFrom("task-x", "task-y"),
          async (consumer, origin, running) => {
            const own = running === "task-x" ? caps.x : caps.y
            const capability = {
              genuine: own,
              otherTask: caps.x2,
              otherAgent: running === "task-x" ? caps.y : caps.x,
              forged: { ...own } as never,
              copied: Object.assign(Object.create(null), own) as never
            }[origin]
            runs.n++
            const operation = id.operation(`p${runs.n}`)
            const attempt = Effect.gen(function* () {
              const journal = yield* Journal.Journal
              switch (consumer) {
                case "compact":
                  return yield* Compaction.compact({
                    history: longHistory(4, 1_500),
                    policy,
                    operation,
                    step: 1,
                    journal: Option.some(journal)
                  }).pipe(PrivateSummaries.provide(capability))
                case "publish":
                  return yield* Compaction.publish({
                    key: { operation, step: 1 },
                    summary: "s",
                    journal: Option.some(journal)
                  }).pipe(PrivateSummaries.provide(capability))
                case "hooks":
                  return yield* TaskExecution.compactionHooks(policy, journal).pipe(
                    PrivateSummaries.provide(capability)
                  )
                case "privateTarget":
                  return yield* ToolResults.privateTarget.pipe(
                    Effect.flatMap((target) =>
                      ToolResults.offloadHooks(
                        { threshold: 10, readTool: "r", destination: "Private" },
                        target,
                        journal
                      )
                    ),
                    PrivateSummaries.provide(capability)
                  )
              }
            }).pipe(
              Effect.provide(
                Layer.merge(
                  countingModel().layer,
                  Journal.layer({ folder: arena.journalFolder, task: id.task(running) })
                )
              ),
              Effect.provide(platform)
            )
            const exit = await Effect.runPromiseExit(attempt as Effect.Effect<unknown, { readonly _tag: string }>)
            const allowed = origin === "genuine"
            if (allowed) return exit._tag === "Success"
            return (
              exit._tag === "Failure" &&
              exit.cause.reasons.some(
                (reason) => reason._tag === "Fail" && (reason.error as { _tag: string })._tag === "Unauthorized"
              )
            )
          }
        )
        yield* Effect.promise(() => fc.assert(property, { numRuns: 2_000 }))
        // Negative control: a property that also allows another task's capability is falsified by the library.
        const tooLenient = yield* Effect.promise(() =>
          fc.check(
            fc.asyncProperty(fc.constant(0), async () => {
              const exit = await Effect.runPromiseExit(
                Effect.flatMap(Journal.Journal, (journal) =>
                  TaskExecution.compactionHooks(policy, journal).pipe(PrivateSummaries.provide(caps.x2))
                ).pipe(
                  Effect.provide(Journal.layer({ folder: arena.journalFolder, task: id.task("task-x") })),
                  Effect.provide(platform)
                ) as Effect.Effect<unknown, unknown>
              )
              return exit._tag === "Success"
            }),
            { numRuns: 1 }
          )
        )
        assert.isTrue(tooLenient.failed)
      })
    ))
})

describe("hostile caller: stores and hosts are the library's, and a runtime honours only its own host's scopes", () => {
  /** Offloads one 500-byte result to the context's output binding, in the journal of `task`. */
  const offloadToOutput = (
    context: Effect.Success<ReturnType<FilesystemTaskRuntime.FilesystemTaskRuntime["bindTask"]>>
  ) =>
    Effect.gen(function* () {
      const journal = yield* Journal.Journal
      const target = yield* ToolResults.outputTarget(context)
      return yield* ToolResults.offloadResult(
        { threshold: 10, readTool: "read_artifact", destination: "Output" },
        target,
        journal,
        { task: context.task, turn: 1, step: 1, call: Model.toolCall("c1", "produce", { size: 500 }) },
        Model.toolResult({ callId: "c1", name: "produce", content: "j".repeat(500), isError: false })
      )
    })

  it("hand_built_store_is_refused: a store whose custody and folderOf lie (agent Y's volume claimed for X) makes no host", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const genuine = arena.host.store
        // The liar answers custody of Y's private volume as X's, and hands out its folder.
        const liar: TaskHost.TaskHost["store"] = {
          ...genuine,
          custody: (ref) =>
            genuine
              .custody(ref)
              .pipe(
                Effect.map(
                  Option.map((descriptor) =>
                    descriptor.id === arena.privY.volume
                      ? { ...descriptor, owner: Volume.agentOwner(agentX) }
                      : descriptor
                  )
                )
              ),
          folderOf: (ref) => Effect.succeed(nodePath.join(genuine.root, "volumes", ref.volume))
        }
        const attack = (store: TaskHost.TaskHost["store"]) =>
          Effect.gen(function* () {
            const host = yield* TaskHost.make(store)
            const runtimeScope = yield* host.issueScope(
              id.task("task-x-runtime"),
              [{ volume: arena.privY, access: ["read", "write"] }],
              agentX
            )
            const runtime = yield* FilesystemTaskRuntime.fromHost(host, {
              private: Option.some(arena.privY),
              scope: runtimeScope
            })
            const scope = yield* host.issueScope(
              id.task("task-x"),
              [{ volume: arena.privY, access: ["read", "write"] }],
              agentX
            )
            const context = yield* runtime.bindTask({ scope, output: Option.none() })
            const capability = yield* PrivateSummaries.resolve(context)
            return yield* PrivateSummaries.stageOnce(
              { operation: id.operation("into-y"), step: 1 },
              "X writes here"
            ).pipe(PrivateSummaries.provide(capability))
          })
        assertRefused(yield* cost(arena, "task-x", attack(liar)), "Unauthorized", "NotMinted")
        assertRefused(yield* cost(arena, "task-x", attack({ ...genuine })), "Unauthorized", "NotMinted")
        assertRefused(yield* cost(arena, "task-x", attack(undefined as never)), "Unauthorized", "NotMinted")
        // Negative control: the same attack over the genuine store gets as far as the verdict, which refuses Y's
        // volume for X on its true facts (the liar's facts were what would have let it through).
        const genuineVerdict = yield* cost(arena, "task-x", attack(genuine))
        assertCheckFails(genuineVerdict, "Unauthorized", "NotMinted")
        assert.strictEqual(genuineVerdict.error?.reason, "NotOwnerBound", genuineVerdict.error?.message)
      })
    ))

  it("second_permissive_host: a scope a permissive host issued over a journal-forbidding host's store is ScopeNotIssued there (fromHost and open)", () => {
    const dir = tempDir()
    const forbidding = Layer.mergeAll(NodeServices.layer, NodeDurableFiles.layer, HostAuthority.forbidJournalGrants)
    return Effect.runPromise(
      Effect.gen(function* () {
        const strict = yield* TaskHost.open({ root: dir })
        const journalRef = yield* strict.store.create({
          id: id.volume("journal"),
          kind: "Journal",
          owner: Volume.hostOwner
        })
        const arena = { root: strict.store.root, journalFolder: yield* strict.store.folderOf(journalRef) } as Arena
        // The strict host itself refuses the grant.
        const refusedGrant = yield* Effect.flip(
          strict.issueScope(id.task("task-j"), [{ volume: journalRef, access: ["write"] }], agentX)
        )
        assert.strictEqual(
          refusedGrant._tag === "Unauthorized" ? refusedGrant.reason : refusedGrant._tag,
          "GrantForbidden"
        )
        // A second host over the very same store, with an authority that allows anything.
        const permissive = yield* TaskHost.make(strict.store).pipe(Effect.provide(HostAuthority.permissive))
        const scope = yield* permissive.issueScope(
          id.task("task-j"),
          [{ volume: journalRef, access: ["read", "write"] }],
          agentX
        )
        const options = { private: Option.none(), scope, output: Option.some(journalRef) }
        const through = (runtime: Effect.Effect<FilesystemTaskRuntime.FilesystemTaskRuntime, unknown, never>) =>
          runtime.pipe(
            Effect.flatMap((bound) => bound.bindTask({ scope, output: Option.some(journalRef) })),
            Effect.flatMap(offloadToOutput)
          )
        assertRefused(
          yield* cost(arena, "task-j", through(FilesystemTaskRuntime.fromHost(strict, options))),
          "Unauthorized",
          "ScopeNotIssued"
        )
        assertRefused(
          yield* cost(
            arena,
            "task-j",
            through(FilesystemTaskRuntime.open({ root: dir, ...options }).pipe(Effect.provide(forbidding)))
          ),
          "Unauthorized",
          "ScopeNotIssued"
        )
        assert.isFalse(strict.issued(scope))
        assert.isTrue(permissive.issued(scope))
        // Negative control: the scope is a real write grant; on the host that issued it, it offloads into the
        // journal volume, and the same check flags the write.
        assertCheckFails(
          yield* cost(arena, "task-j", through(FilesystemTaskRuntime.fromHost(permissive, options))),
          "Unauthorized",
          "ScopeNotIssued"
        )
      }).pipe(
        Effect.provide(forbidding),
        Effect.ensuring(Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true })))
      ) as Effect.Effect<void>
    )
  })

  it("open_checks_the_issuer: open under the issuing host's authority on its root binds; another root or authority is ScopeNotIssued", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const scope = yield* arena.host.issueScope(
          id.task("task-o"),
          [{ volume: arena.outputRef, access: ["write"] }],
          agentX
        )
        const opened = yield* FilesystemTaskRuntime.open({ root: arena.root, private: Option.none(), scope })
        assert.strictEqual(opened.host, arena.host)
        const otherRoot = tempDir()
        const elsewhere = yield* Effect.flip(
          FilesystemTaskRuntime.open({ root: otherRoot, private: Option.none(), scope })
        )
        assert.strictEqual(elsewhere._tag === "Unauthorized" ? elsewhere.reason : elsewhere._tag, "ScopeNotIssued")
        assert.deepStrictEqual(fs.readdirSync(otherRoot), [], "a refused open left files behind")
        fs.rmSync(otherRoot, { recursive: true, force: true })
        const otherAuthority = yield* Effect.flip(
          FilesystemTaskRuntime.open({ root: arena.root, private: Option.none(), scope }).pipe(
            Effect.provide(HostAuthority.forbidJournalGrants)
          )
        )
        assert.strictEqual(
          otherAuthority._tag === "Unauthorized" ? otherAuthority.reason : otherAuthority._tag,
          "ScopeNotIssued"
        )
      })
    ))

  it("missing_private_decision: a JavaScript caller leaving out `private` (or passing a bare reference) gets InvalidInput, not a TypeError", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const scope = yield* arena.host.issueScope(
          id.task("task-p"),
          [{ volume: arena.privX, access: ["read", "write"] }],
          agentX
        )
        for (const options of [{ scope }, { scope, private: arena.privX }, { scope, private: undefined }]) {
          assertRefused(
            yield* cost(arena, "task-p", FilesystemTaskRuntime.fromHost(arena.host, options as never)),
            "InvalidInput",
            "options"
          )
        }
        // Negative control: the decided option binds.
        const decided = yield* cost(
          arena,
          "task-p",
          FilesystemTaskRuntime.fromHost(arena.host, { scope, private: Option.some(arena.privX) })
        )
        assert.isUndefined(decided.error)
        assertCheckFails(decided, "InvalidInput", "options")
      })
    ))
})

describe("hostile caller: a binding is admitted only to its own task's journal", () => {
  it("task_mismatch: a genuine binding run against another task's journal is Unauthorized TaskMismatch: zero requests, nothing journaled, store unchanged", () =>
    inArena((arena) =>
      Effect.gen(function* () {
        const x = yield* arena.taskOn(agentX, "task-x", arena.privX)
        const binding = yield* EntryGate.bind(x.context, { policy: Compaction.disabled })
        const turn = TaskExecution.runTurn(binding, longHistory(1, 10), { tools, maxSteps: 2 })
        // `cost` puts the journal of the task it is given in scope: another task's.
        assertRefused(yield* cost(arena, "task-other", turn), "Unauthorized", "TaskMismatch")
        // Negative control: the binding's own journal admits the same turn, which sends and journals.
        assertCheckFails(yield* cost(arena, "task-x", turn), "Unauthorized", "TaskMismatch")
      })
    ))
})
