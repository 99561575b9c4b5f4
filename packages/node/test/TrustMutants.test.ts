/**
 * What a caller reads from the trust guards' refusals and successes, check by
 * check: which registry refused (the detail names the object and the entry),
 * which facts of a volume changed, which candidate a writer resolution
 * refused and why, which policy a binding carries, what the staged bytes are
 * compared with, and what the spans of the gated entries say. Written against
 * the surviving mutants of `npm run mutation` (docs/security-model.md,
 * "Mutation testing of the guards"): each test fails with the check it names
 * removed or inverted, and each has a negative control showing the
 * assertion can fail on the same scenario with the genuine piece swapped in
 * or out.
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { DurableFiles, type Grant } from "@tessera/core"
import {
  Compaction,
  EntryGate,
  FilesystemTaskRuntime,
  Journal,
  PrivateSummaries,
  TaskHost,
  VolumeStore
} from "@tessera/runtime"
import { Context, Effect, FileSystem, type Layer, Option, Path, Tracer } from "effect"
import {
  agent,
  agentId,
  operationId,
  type platformLayer,
  runInWorld,
  taskId,
  type World
} from "./runtime/support/world.ts"

type Failure = { readonly _tag: string; readonly [field: string]: unknown }

/** The typed failure of `effect`, or a test failure naming what it succeeded with. */
const failureOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flip(effect).pipe(
    Effect.map((error) => error as unknown as Failure & { readonly message: string }),
    Effect.catchDefect((defect) => Effect.die(new Error(`a defect, not a typed failure: ${String(defect)}`)))
  )

/** A task of the world's agent, bound on a runtime whose private volume is the agent's own. */
const withWriter = (world: World, task = taskId("task-1")) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.some(world.privateRef))
    const scope = yield* world.scopeFor([world.privateRef], task)
    const context = yield* runtime.bindTask({ scope, output: Option.none() })
    return { runtime, scope, context }
  })

/** A task with no candidate volume at all. */
const writerless = (world: World) =>
  Effect.gen(function* () {
    const runtime = yield* world.openRuntime(Option.none(), [])
    const scope = yield* world.scopeFor([])
    const context = yield* runtime.bindTask({ scope, output: Option.none() })
    return { runtime, scope, context }
  })

const metaFile = (world: World, volume: string) =>
  path.join(world.host.store.root, ...VolumeStore.metaFolder, `${volume}.json`)

/** Rewrites the registration of the world's private volume through `change`; returns the restore. */
const reregister = (world: World, change: (descriptor: Record<string, unknown>) => Record<string, unknown> | null) => {
  const file = metaFile(world, world.privateRef.volume)
  const original = fs.readFileSync(file, "utf8")
  const changed = change(JSON.parse(original) as Record<string, unknown>)
  if (changed === null) fs.rmSync(file)
  else fs.writeFileSync(file, JSON.stringify(changed))
  return () => fs.writeFileSync(file, original)
}

const journalOf = (world: World, task = taskId("task-1")) =>
  Effect.flatMap(world.host.store.folderOf(world.journalRef), (folder) =>
    Effect.succeed(Journal.layer({ folder, task }))
  )

/** Runs `body` under a tracer of its own; returns its exit and the spans it opened. */
const traced = <A, E, R>(body: Effect.Effect<A, E, R>) => {
  const spans: Array<Tracer.Span> = []
  const tracer = Tracer.make({
    span(options) {
      const span = Tracer.nativeTracer.span(options)
      spans.push(span)
      return span
    }
  })
  return Effect.exit(body).pipe(
    Effect.withTracer(tracer),
    Effect.map((exit) => ({ exit, spans }))
  )
}

const attributesOf = (spans: ReadonlyArray<Tracer.Span>, name: string) => {
  const span = spans.find((candidate) => candidate.name === name)
  assert.isDefined(span, `no span ${name} among ${spans.map((s) => s.name).join(", ")}`)
  return Object.fromEntries(span?.attributes ?? [])
}

const sha256 = (text: string) => crypto.createHash("sha256").update(text).digest("hex")

describe("trust guards: a refusal says which check refused", () => {
  it("not_minted_names_the_object_and_entry: a copied binding, context, host or store is NotMinted naming it", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { runtime, scope, context } = yield* withWriter(world)
        const binding = yield* EntryGate.bind(context, { policy: Compaction.disabled })
        const journal = yield* journalOf(world)

        const copiedBinding = yield* failureOf(EntryGate.verify({ ...binding }, "Turn").pipe(Effect.provide(journal)))
        assert.strictEqual(copiedBinding.reason, "NotMinted")
        assert.strictEqual(
          copiedBinding.detail,
          "Turn: the task binding was not made by the library (built by hand or copied); only values the library minted are trusted"
        )
        assert.notProperty(copiedBinding, "task")

        const copiedContext = yield* failureOf(PrivateSummaries.resolve({ ...context }))
        assert.strictEqual(copiedContext.reason, "NotMinted")
        assert.include(copiedContext.detail as string, "PrivateSummaries.resolve: the task context was not made")

        const copiedHost = yield* failureOf(
          FilesystemTaskRuntime.fromHost({ ...world.host }, { private: Option.none(), scope })
        )
        assert.strictEqual(copiedHost.reason, "NotMinted")
        assert.include(copiedHost.detail as string, "FilesystemTaskRuntime.fromHost: the task host was not made")

        const copiedStore = yield* failureOf(TaskHost.make({ ...world.host.store }))
        assert.strictEqual(copiedStore.reason, "NotMinted")
        assert.include(copiedStore.detail as string, "TaskHost.make: the volume store was not made")

        const copiedAtBind = yield* failureOf(EntryGate.bind({ ...context }))
        assert.strictEqual(copiedAtBind.reason, "NotMinted")
        assert.include(copiedAtBind.detail as string, "Bind: the task context was not made")

        // Negative control: the genuine objects pass the same entries.
        assert.isTrue(Option.isNone((yield* EntryGate.verify(binding, "Turn").pipe(Effect.provide(journal))).writer))
        assert.strictEqual((yield* PrivateSummaries.resolve(context)).source, "RuntimePrivate")
        assert.isTrue(FilesystemTaskRuntime.isTaskContext(yield* runtime.bindTask({ scope, output: Option.none() })))
        yield* FilesystemTaskRuntime.fromHost(world.host, { private: Option.none(), scope })
        yield* TaskHost.make(world.host.store)
        assert.isFalse(FilesystemTaskRuntime.isTaskContext({ ...context }))
      })
    ))

  it("scope_not_issued_says_by_whom: a hand-built scope names no task; another host's scope names its task", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const scope = yield* world.scopeFor([world.privateRef])
        const runtime = yield* FilesystemTaskRuntime.fromHost(world.host, { private: Option.none(), scope })

        const handBuilt = yield* failureOf(runtime.bindTask({ scope: { ...scope }, output: Option.none() }))
        assert.strictEqual(handBuilt.reason, "ScopeNotIssued")
        assert.strictEqual(
          handBuilt.detail,
          "the scope was not issued by any host (built by hand or copied); issue it with host.issueScope"
        )
        assert.notProperty(handBuilt, "task")

        const other = yield* TaskHost.make(world.host.store)
        const foreign = yield* other.issueScope(taskId("task-foreign"), [], agent)
        const byOther = yield* failureOf(runtime.bindTask({ scope: foreign, output: Option.none() }))
        assert.strictEqual(byOther.reason, "ScopeNotIssued")
        assert.strictEqual(
          byOther.detail,
          "the scope of task task-foreign was issued by another host than this runtime's host (a host over another store, or with another authority); issue it with that host's issueScope"
        )
        assert.strictEqual(byOther.task, "task-foreign")
        const atOpen = yield* failureOf(
          FilesystemTaskRuntime.fromHost(world.host, { private: Option.none(), scope: foreign })
        )
        assert.strictEqual(atOpen.task, "task-foreign")

        // A non-object where a scope belongs is refused the same way, not a TypeError.
        const notAnObject = yield* failureOf(
          runtime.bindTask({ scope: "task-1" as unknown as Grant.Scope, output: Option.none() })
        )
        assert.strictEqual(notAnObject.reason, "ScopeNotIssued")
        assert.notProperty(notAnObject, "task")

        // Negative control: on the host that issued it, the foreign scope binds.
        const otherRuntime = yield* FilesystemTaskRuntime.fromHost(other, { private: Option.none(), scope: foreign })
        const bound = yield* otherRuntime.bindTask({ scope: foreign, output: Option.none() })
        assert.strictEqual(bound.task, "task-foreign")
      })
    ))

  it("volume_changed_for_every_fact: a removed registration, another kind, a host owner, another agent", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { context } = yield* withWriter(world)
        const capability = yield* PrivateSummaries.resolve(context)
        const admit = PrivateSummaries.admit("Probe.write").pipe(PrivateSummaries.provide(capability))
        const changes: ReadonlyArray<[string, (d: Record<string, unknown>) => Record<string, unknown> | null]> = [
          ["unregistered", () => null],
          ["kind", (d) => ({ ...d, kind: "Scratch" })],
          ["host owner", (d) => ({ ...d, owner: { _tag: "Host" } })],
          ["another agent", (d) => ({ ...d, owner: { _tag: "Agent", agent: "reviewer" } })]
        ]
        for (const [what, change] of changes) {
          const restore = reregister(world, change)
          const refused = yield* failureOf(admit)
          restore()
          assert.strictEqual(refused.reason, "VolumeChanged", `${what}: ${refused.message}`)
          assert.strictEqual(refused.task, "task-1")
          assert.deepStrictEqual(refused.volume, world.privateRef)
          assert.strictEqual(
            refused.detail,
            `Probe.write: volume ${world.privateRef.store}/${world.privateRef.volume} is no longer registered as it was when the capability was minted`
          )
        }
        // Negative control: the same registration rewritten with the same facts admits.
        const restore = reregister(world, (d) => ({ ...d }))
        assert.strictEqual(yield* admit, capability)
        restore()
      })
    ))

  it("capability_mismatch_names_the_capability: another task's journal is refused with the capability's task and volume", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { context } = yield* withWriter(world)
        const capability = yield* PrivateSummaries.resolve(context)
        const foreignJournal = { task: taskId("task-2"), file: "/elsewhere/task-2.jsonl" }
        const refused = yield* failureOf(
          PrivateSummaries.admit("Probe.write", Option.some(foreignJournal)).pipe(PrivateSummaries.provide(capability))
        )
        assert.strictEqual(refused.reason, "CapabilityMismatch")
        assert.strictEqual(refused.task, "task-1")
        assert.deepStrictEqual(refused.volume, world.privateRef)
        assert.include(
          refused.detail as string,
          "Probe.write: the capability was minted for task task-1 (agent researcher)"
        )
        assert.include(refused.detail as string, "the journal /elsewhere/task-2.jsonl is task task-2's")

        const forged = yield* failureOf(
          PrivateSummaries.admit("Probe.write").pipe(
            PrivateSummaries.provide({ ...capability } as PrivateSummaries.PrivateWriterCapability)
          )
        )
        assert.strictEqual(forged.reason, "NotMinted")
        assert.notProperty(forged, "task")
        assert.notProperty(forged, "volume")
        assert.include(forged.detail as string, "Probe.write: the private-summaries capability was not minted")

        // Negative control: the task's own journal file admits the genuine capability.
        const folder = yield* world.host.store.folderOf(world.journalRef)
        const ownJournal = { task: taskId("task-1"), file: path.join(folder, Journal.fileName(taskId("task-1"))) }
        const admitted = yield* PrivateSummaries.admit("Probe.write", Option.some(ownJournal)).pipe(
          PrivateSummaries.provide(capability)
        )
        assert.strictEqual(admitted, capability)
      })
    ))

  it("no_private_writer_lists_each_candidate: source, volume and reason per refused candidate, or none at all", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const none = yield* writerless(world)
        const empty = yield* failureOf(PrivateSummaries.resolve(none.context))
        assert.strictEqual(empty.reason, "NoPrivateWriter")
        assert.strictEqual(empty.task, "task-1")
        assert.strictEqual(empty.detail, "task has no owner-bound private writer (no candidate volume)")

        const runtime = yield* world.openRuntime(Option.none(), [])
        const scope = yield* world.scopeFor([world.scratchRef, world.otherPrivateRef])
        const context = yield* runtime.bindTask({
          scope,
          createdPrivate: [world.otherPrivateRef],
          output: Option.some(world.scratchRef)
        })
        const listed = yield* failureOf(PrivateSummaries.resolve(context))
        const store = world.host.store.id
        assert.strictEqual(
          listed.detail,
          `task has no owner-bound private writer (CreatedPrivate ${store}/reviewer-private: NotOwnerBound; OutputBinding ${store}/scratch: NotAgentPrivate)`
        )
        // Negative control: with the agent's own volume among the candidates, it resolves.
        const own = yield* world.scopeFor([world.privateRef])
        const resolved = yield* PrivateSummaries.resolve(
          yield* runtime.bindTask({ scope: own, createdPrivate: [world.privateRef], output: Option.none() })
        )
        assert.strictEqual(resolved.source, "CreatedPrivate")
      })
    ))

  it("store_failure_is_not_a_missing_writer: an unreadable registration fails resolveOption, bind and verify as itself", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { context } = yield* withWriter(world)
        const armed = yield* EntryGate.bind(context, { policy: Compaction.threshold() })
        const journal = yield* journalOf(world)
        const restore = reregister(world, (d) => ({ ...d, kind: 42 }))
        const optional = yield* failureOf(PrivateSummaries.resolveOption(context))
        const atBind = yield* failureOf(EntryGate.bind(context, { policy: Compaction.threshold() }))
        const atVerify = yield* failureOf(EntryGate.verify(armed, "Turn").pipe(Effect.provide(journal)))
        restore()
        for (const failure of [optional, atBind, atVerify]) assert.strictEqual(failure._tag, "VolumeMetadataInvalid")
        // Negative control: readable again, each of them resolves the writer.
        assert.isTrue(Option.isSome(yield* PrivateSummaries.resolveOption(context)))
        yield* EntryGate.bind(context, { policy: Compaction.threshold() })
        assert.isTrue(Option.isSome((yield* EntryGate.verify(armed, "Turn").pipe(Effect.provide(journal))).writer))
      })
    ))
})

describe("private-summaries service: its identity", () => {
  it("service_key_is_the_library_name: a service of that key, from another copy of the module, carries the capability", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const capability = yield* PrivateSummaries.resolve((yield* withWriter(world)).context)
        // Effect matches services by key: a second copy of the runtime in one program (two bundles) names the
        // capability's service the same, so what one resolves the other admits.
        class Twin extends Context.Service<Twin, PrivateSummaries.PrivateWriterCapability>()(
          "@tessera/runtime/PrivateSummaries"
        ) {}
        class Stranger extends Context.Service<Stranger, PrivateSummaries.PrivateWriterCapability>()(
          "@tessera/runtime/Other"
        ) {}
        assert.strictEqual(PrivateSummaries.PrivateSummaries.key, Twin.key)
        const viaTwin = PrivateSummaries.admit("Probe.write").pipe(Effect.provideService(Twin, capability))
        assert.strictEqual(yield* viaTwin as Effect.Effect<unknown, unknown, Path.Path>, capability)
        // Negative control: under another key the capability is not in scope at all.
        const viaStranger = PrivateSummaries.admit("Probe.write").pipe(Effect.provideService(Stranger, capability))
        const exit = yield* Effect.exit(viaStranger as Effect.Effect<unknown, unknown, Path.Path>)
        assert.strictEqual(exit._tag, "Failure")
      })
    ))
})

describe("entry gate: the policy a binding carries decides what verify requires", () => {
  it("verify_hands_back_the_admission: the binding's context and policy, and the writer when the policy or the entry needs it; a writerless task asked for one is NoPrivateWriter", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { context } = yield* withWriter(world)
        const journal = yield* journalOf(world)
        const disabled = yield* EntryGate.bind(context, { policy: Compaction.disabled })
        const byPolicy = yield* EntryGate.verify(disabled, "Turn").pipe(Effect.provide(journal))
        assert.strictEqual(byPolicy.context, context)
        assert.strictEqual(byPolicy.policy, disabled.policy)
        assert.isTrue(Option.isNone(byPolicy.writer))
        const required = yield* EntryGate.verify(disabled, "SummaryFileTurn", { writer: "Required" }).pipe(
          Effect.provide(journal)
        )
        assert.strictEqual(Option.getOrThrow(required.writer).source, "RuntimePrivate")
        assert.strictEqual(Option.getOrThrow(required.writer).task, context.task)

        // The volume now belongs to another agent: asked for, the writer is refused with the resolution's reason.
        const restore = reregister(world, (d) => ({ ...d, owner: { _tag: "Agent", agent: "reviewer" } }))
        const refused = yield* failureOf(
          EntryGate.verify(disabled, "SummaryFileTurn", { writer: "Required" }).pipe(Effect.provide(journal))
        )
        // Negative control: the same entry not asking for the writer passes on the same task.
        const unasked = yield* EntryGate.verify(disabled, "SummaryFileTurn").pipe(Effect.provide(journal))
        restore()
        assert.strictEqual(refused.reason, "NoPrivateWriter")
        assert.isTrue(Option.isNone(unasked.writer))
      })
    ))

  it("verify_follows_the_policy: Disabled resolves nothing, Threshold returns the writer, an armed task that lost it is refused", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { context } = yield* withWriter(world)
        const journal = yield* journalOf(world)
        const disabled = yield* EntryGate.bind(context, { policy: Compaction.disabled })
        const armed = yield* EntryGate.bind(context, { policy: Compaction.threshold({ limit: 5_000 }) })
        assert.strictEqual(armed.policy._tag, "Threshold")
        assert.strictEqual((armed.policy as Compaction.Threshold).limit, 5_000)
        assert.isTrue(Option.isNone((yield* EntryGate.verify(disabled, "Turn").pipe(Effect.provide(journal))).writer))
        const { writer } = yield* EntryGate.verify(armed, "Turn").pipe(Effect.provide(journal))
        assert.strictEqual(Option.getOrThrow(writer).source, "RuntimePrivate")

        // The volume now belongs to another agent: an armed task has no writer, a disabled one does not care.
        const restore = reregister(world, (d) => ({ ...d, owner: { _tag: "Agent", agent: "reviewer" } }))
        const lost = yield* failureOf(EntryGate.verify(armed, "ModelStep").pipe(Effect.provide(journal)))
        const stillDisabled = (yield* EntryGate.verify(disabled, "ModelStep").pipe(Effect.provide(journal))).writer
        restore()
        assert.strictEqual(lost.reason, "NoPrivateWriter")
        assert.strictEqual(lost.task, "task-1")
        assert.match(
          lost.detail as string,
          /^ModelStep: compaction is armed \(Threshold\) but task has no owner-bound private writer \(RuntimePrivate .*: NotOwnerBound\)$/
        )
        assert.isTrue(Option.isNone(stillDisabled))
      })
    ))

  it("bind_picks_the_policy: default Threshold where a writer resolves (or the given threshold), Disabled elsewhere; arming without one is refused", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { context } = yield* withWriter(world)
        const byDefault = yield* EntryGate.bind(context)
        assert.deepStrictEqual(byDefault.policy, Compaction.defaultThreshold)
        const given = Compaction.threshold({ limit: 7_000, keepRecent: 10 })
        assert.deepStrictEqual((yield* EntryGate.bind(context, { threshold: given })).policy, given)
        assert.strictEqual(byDefault.context, context)

        const none = yield* writerless(world)
        const unarmed = yield* EntryGate.bind(none.context, { threshold: given })
        assert.strictEqual(unarmed.policy._tag, "Disabled")
        const refused = yield* failureOf(EntryGate.bind(none.context, { policy: given }))
        assert.strictEqual(refused.reason, "NoPrivateWriter")
        assert.strictEqual(refused.task, "task-1")
        assert.strictEqual(
          refused.detail,
          "Bind: compaction is armed (Threshold) but task has no owner-bound private writer (no candidate volume)"
        )
        // Negative control: Disabled asks for no writer.
        assert.strictEqual(
          (yield* EntryGate.bind(none.context, { policy: Compaction.disabled })).policy._tag,
          "Disabled"
        )
      })
    ))

  it("bind_decodes_the_policy: a malformed policy or threshold is InvalidInput at EntryGate.bind", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { context } = yield* withWriter(world)
        const badPolicy = yield* failureOf(
          EntryGate.bind(context, { policy: { _tag: "Sometimes" } as unknown as Compaction.Policy })
        )
        const badThreshold = yield* failureOf(
          EntryGate.bind(context, {
            threshold: { _tag: "Threshold", limit: -1 } as unknown as Compaction.Threshold
          })
        )
        for (const failure of [badPolicy, badThreshold]) {
          assert.strictEqual(failure._tag, "InvalidInput")
          assert.strictEqual(failure.entry, "EntryGate.bind")
          assert.strictEqual(failure.field, "policy")
        }
        // Negative control: a well-formed threshold binds.
        yield* EntryGate.bind(context, { threshold: Compaction.threshold({ limit: 1 }) })
      })
    ))

  it("journal_checks_name_the_entry: TaskMismatch and AgentMismatch say which entry, task and agents", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { context } = yield* withWriter(world)
        const binding = yield* EntryGate.bind(context, { policy: Compaction.disabled })
        const mismatch = yield* failureOf(
          EntryGate.verify(binding, "ToolDispatch").pipe(Effect.provide(yield* journalOf(world, taskId("task-2"))))
        )
        assert.strictEqual(mismatch.reason, "TaskMismatch")
        assert.strictEqual(mismatch.task, "task-1")
        assert.match(
          mismatch.detail as string,
          /^ToolDispatch: the journal in scope \(.*task-2\.jsonl, task task-2\) is not the record of the bound task task-1 on store /
        )

        // The same task id issued to another agent, gated on one journal after the first agent claimed it.
        const reviewer = agentId("reviewer")
        const otherScope = yield* world.host.issueScope(taskId("task-1"), [], reviewer)
        const otherRuntime = yield* FilesystemTaskRuntime.fromHost(world.host, {
          private: Option.none(),
          scope: otherScope
        })
        const otherBinding = yield* EntryGate.bind(
          yield* otherRuntime.bindTask({ scope: otherScope, output: Option.none() }),
          {
            policy: Compaction.disabled
          }
        )
        const both = Effect.gen(function* () {
          yield* EntryGate.verify(binding, "Turn")
          return yield* failureOf(EntryGate.verify(otherBinding, "ResumeTurn"))
        })
        const agents = yield* both.pipe(Effect.provide(yield* journalOf(world)))
        assert.strictEqual(agents.reason, "AgentMismatch")
        assert.strictEqual(agents.task, "task-1")
        assert.strictEqual(
          agents.detail,
          "ResumeTurn: task task-1 runs for agent researcher (its journal says so); a binding of agent reviewer is not admitted to it"
        )
        // Negative control: the same agent again is admitted on that journal.
        const again = Effect.gen(function* () {
          yield* EntryGate.verify(binding, "Turn")
          return yield* EntryGate.verify(binding, "ResumeTurn")
        })
        assert.isTrue(Option.isNone((yield* again.pipe(Effect.provide(yield* journalOf(world)))).writer))
      })
    ))

  it("gate_spans_say_task_entry_and_policy: EntryGate.bind and EntryGate.verify under a tracer", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { context } = yield* withWriter(world)
        const journal = yield* journalOf(world)
        const { exit, spans } = yield* traced(
          Effect.gen(function* () {
            const binding = yield* EntryGate.bind(context, { policy: Compaction.disabled })
            const byDefault = yield* EntryGate.bind(context)
            yield* EntryGate.verify(binding, "ToolDispatch")
            return byDefault
          }).pipe(Effect.provide(journal))
        )
        assert.strictEqual(exit._tag, "Success")
        const binds = spans
          .filter((span) => span.name === "EntryGate.bind")
          .map((span) => Object.fromEntries(span.attributes))
        assert.deepStrictEqual(binds, [
          { "tessera.task": "task-1", "tessera.policy": "Disabled" },
          { "tessera.task": "task-1", "tessera.policy": "Threshold" }
        ])
        assert.deepStrictEqual(attributesOf(spans, "EntryGate.verify"), {
          "tessera.task": "task-1",
          "tessera.entry": "ToolDispatch",
          "tessera.policy": "Disabled"
        })
        // The default binding asked the resolver, in a span of its own.
        assert.deepStrictEqual(attributesOf(spans, "PrivateSummaries.resolve"), {})
      })
    ))
})

describe("runtime binding: what a task context inherits and how its input is decoded", () => {
  it("bind_task_inherits_the_output_binding: an omitted output is the runtime's, an explicit none is none", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const scope = yield* world.scopeFor([world.outputRef])
        const runtime = yield* FilesystemTaskRuntime.fromHost(world.host, {
          private: Option.none(),
          scope,
          output: Option.some(world.outputRef)
        })
        assert.deepStrictEqual(Option.getOrThrow(runtime.output).ref, world.outputRef)
        const inherited = yield* runtime.bindTask({ scope })
        assert.deepStrictEqual(Option.getOrThrow(inherited.output).ref, world.outputRef)
        assert.strictEqual(Option.getOrThrow(inherited.output).descriptor.kind, "Output")
        assert.deepStrictEqual(inherited.createdPrivate, [])
        assert.isTrue(Object.isFrozen(inherited.createdPrivate))
        // Negative control: an explicit none is not the runtime's binding.
        assert.isTrue(Option.isNone((yield* runtime.bindTask({ scope, output: Option.none() })).output))
        const bare = yield* FilesystemTaskRuntime.fromHost(world.host, { private: Option.none(), scope })
        assert.isTrue(Option.isNone(bare.output))
        assert.isTrue(Option.isNone((yield* bare.bindTask({ scope })).output))
      })
    ))

  it("bind_task_decodes_by_name: a malformed createdPrivate, output or runtime option is InvalidInput naming it", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const scope = yield* world.scopeFor([world.privateRef])
        const runtime = yield* FilesystemTaskRuntime.fromHost(world.host, { private: Option.none(), scope })
        const created = yield* failureOf(
          runtime.bindTask({ scope, createdPrivate: ["researcher-private"] as never, output: Option.none() })
        )
        const output = yield* failureOf(runtime.bindTask({ scope, output: world.outputRef as never }))
        const options = yield* failureOf(
          FilesystemTaskRuntime.fromHost(world.host, { private: Option.none(), scope, output: "output" as never })
        )
        assert.deepInclude(created, { _tag: "InvalidInput", entry: "bindTask", field: "createdPrivate" })
        assert.deepInclude(output, { _tag: "InvalidInput", entry: "bindTask", field: "output" })
        assert.deepInclude(options, { _tag: "InvalidInput", entry: "FilesystemTaskRuntime", field: "options" })
        // Negative control: the same references, well-formed, bind.
        const bound = yield* runtime.bindTask({ scope, createdPrivate: [world.privateRef], output: Option.none() })
        assert.deepStrictEqual(bound.createdPrivate, [world.privateRef])
        assert.isTrue(Object.isFrozen(bound.createdPrivate))
      })
    ))
})

describe("private staging: the bytes compared, read back and withdrawn", () => {
  const key = { operation: operationId("compaction"), step: 4 }

  const staging = (world: World) =>
    Effect.map(withWriter(world), ({ context }) => context).pipe(
      Effect.flatMap(PrivateSummaries.resolve),
      Effect.map((capability) => ({
        capability,
        stage: (content: string | Uint8Array) =>
          PrivateSummaries.stageOnce(key, content).pipe(PrivateSummaries.provide(capability)),
        read: PrivateSummaries.readStaged(key).pipe(PrivateSummaries.provide(capability)),
        withdraw: PrivateSummaries.withdraw(key).pipe(PrivateSummaries.provide(capability))
      }))
    )

  it("restage_compares_every_byte: a longer, shorter or same-length different text conflicts; the same bytes do not", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { stage } = yield* staging(world)
        const first = yield* stage("the summary")
        for (const other of ["the summary, extended", "the summar", "the summarY"]) {
          const conflict = yield* failureOf(stage(other))
          assert.strictEqual(conflict._tag, "StagingConflict", `${other}: ${conflict.message}`)
          assert.deepInclude(conflict, {
            path: "summaries/compaction/4.txt",
            existingSize: 11,
            existingSha256: sha256("the summary"),
            stagedSize: Buffer.byteLength(other),
            stagedSha256: sha256(other)
          })
          assert.strictEqual(
            conflict.message,
            `summaries/compaction/4.txt is already staged with different content (11 bytes, sha256 ${sha256("the summary").slice(0, 12)}); the new ${Buffer.byteLength(other)} bytes were not written`
          )
        }
        assert.strictEqual(fs.readFileSync(first.absolutePath, "utf8"), "the summary")
        // Negative control: the very bytes, given as a Uint8Array, are the staged file.
        const again = yield* stage(new TextEncoder().encode("the summary"))
        assert.strictEqual(again.outcome, "AlreadyStaged")
        assert.strictEqual(again.sha256, sha256("the summary"))
        assert.deepStrictEqual(fs.readdirSync(path.dirname(first.absolutePath)), ["4.txt"])
      })
    ))

  it("stage_bytes_are_stored_as_given: Uint8Array content is staged byte for byte", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { stage } = yield* staging(world)
        const bytes = Uint8Array.from([0, 255, 10, 128, 65])
        const staged = yield* stage(bytes)
        assert.strictEqual(staged.outcome, "Published")
        assert.strictEqual(staged.size, 5)
        assert.deepStrictEqual(new Uint8Array(fs.readFileSync(staged.absolutePath)), bytes)
        assert.strictEqual(staged.sha256, crypto.createHash("sha256").update(bytes).digest("hex"))
        // Negative control: the array's text form (what stringifying it would stage) is other bytes.
        assert.strictEqual((yield* failureOf(stage(String(bytes))))._tag, "StagingConflict")
        assert.strictEqual((yield* stage(Uint8Array.from(bytes))).outcome, "AlreadyStaged")
      })
    ))

  it("read_staged_returns_the_file: none before staging, the staged text and facts after, none once withdrawn", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { stage, read, withdraw } = yield* staging(world)
        assert.isTrue(Option.isNone(yield* read))
        const staged = yield* stage("the summary")
        const found = Option.getOrThrow(yield* read)
        assert.strictEqual(found.text, "the summary")
        assert.deepStrictEqual(found.file, { ...staged, outcome: "AlreadyStaged" })
        yield* withdraw
        assert.isFalse(fs.existsSync(staged.absolutePath))
        assert.isTrue(Option.isNone(yield* read))
        // Absent already is fine.
        yield* withdraw
        // Negative control: staged again after the withdrawal, it is there to read.
        assert.strictEqual((yield* stage("a new summary")).outcome, "Published")
        assert.strictEqual(Option.getOrThrow(yield* read).text, "a new summary")
      })
    ))

  it("read_and_withdraw_fail_typed: a folder where the file belongs is StagingReadFailed naming the path", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { capability, read, withdraw } = yield* staging(world)
        const where = path.join(capability.folder, "summaries", "compaction", "4.txt")
        fs.mkdirSync(path.join(where, "inside"), { recursive: true })
        const unreadable = yield* failureOf(read)
        const irremovable = yield* failureOf(withdraw)
        for (const failure of [unreadable, irremovable]) {
          assert.strictEqual(failure._tag, "StagingReadFailed", failure.message)
          assert.strictEqual(failure.path, where)
          assert.include(failure.message, `could not read the staged file ${where}: `)
        }
        assert.isTrue(fs.existsSync(path.join(where, "inside")))
        // Negative control: with the folder gone, there is nothing to read and withdrawing is fine.
        fs.rmSync(where, { recursive: true })
        assert.isTrue(Option.isNone(yield* read))
        yield* withdraw
      })
    ))

  it("unreadable_existing_file_is_staging_read_failed: a folder where the staged file belongs fails typed, leaving no temporary name", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { capability, stage } = yield* staging(world)
        const where = path.join(capability.folder, "summaries", "compaction", "4.txt")
        fs.mkdirSync(where, { recursive: true })
        const failed = yield* failureOf(stage("the summary"))
        assert.strictEqual(failed._tag, "StagingReadFailed", failed.message)
        assert.strictEqual(failed.path, where)
        assert.include(failed.message, `could not read the staged file ${where}: `)
        assert.deepStrictEqual(fs.readdirSync(path.dirname(where)), ["4.txt"])
        assert.isTrue(fs.statSync(where).isDirectory())
        // Negative control: with the folder gone, the same staging publishes.
        fs.rmdirSync(where)
        assert.strictEqual((yield* stage("the summary")).outcome, "Published")
      })
    ))

  it("staging_writes_its_temporary_name_once: beside the final name, named for the step, no folder sync; removed only when not published", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { capability, stage } = yield* staging(world)
        const files = yield* DurableFiles.DurableFiles
        const fileSystem = yield* FileSystem.FileSystem
        const writes: Array<{ readonly path: string; readonly options: unknown }> = []
        const removed: Array<string> = []
        // The platform services a host provides, recorded on their way through.
        const recorded = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
          effect.pipe(
            Effect.provideService(DurableFiles.DurableFiles, {
              ...files,
              writeNewFile: (file, bytes, options) => {
                writes.push({ path: file, options })
                return files.writeNewFile(file, bytes, options)
              }
            }),
            Effect.provideService(FileSystem.FileSystem, {
              ...fileSystem,
              remove: (file, options) => {
                removed.push(file)
                return fileSystem.remove(file, options)
              }
            })
          )
        const published = yield* recorded(stage("the summary"))
        assert.strictEqual(published.outcome, "Published")
        assert.strictEqual(writes.length, 1)
        const temporary = writes[0]?.path ?? ""
        assert.strictEqual(path.dirname(temporary), path.dirname(published.absolutePath))
        assert.isTrue(path.basename(temporary).startsWith(".4.txt."), temporary)
        assert.isTrue(DurableFiles.isTemporaryName(path.basename(temporary)), temporary)
        assert.deepStrictEqual(writes[0]?.options, {
          within: capability.folder,
          createFolders: true,
          syncFolder: false
        })
        assert.deepStrictEqual(removed, [], "a published temporary name is gone with the publish")
        // Negative control: a restage that finds the file removes its own temporary name, and the record shows it.
        assert.strictEqual((yield* recorded(stage("the summary"))).outcome, "AlreadyStaged")
        assert.strictEqual(writes.length, 2)
        assert.deepStrictEqual(removed, [writes[1]?.path])
        assert.deepStrictEqual(fs.readdirSync(path.dirname(published.absolutePath)), ["4.txt"])
      })
    ))

  it("final_path_outside_the_folder_is_refused: a Path that joins the summary elsewhere gets OutsideWithin before any write", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { capability, stage } = yield* staging(world)
        const real = yield* Path.Path
        const outside = real.join(world.root, "outside")
        const relative = PrivateSummaries.stagedPath(key)
        const skewed: Path.Path = {
          ...real,
          join: (...parts) => (parts.at(-1) === relative ? real.join(outside, "4.txt") : real.join(...parts))
        }
        const refused = yield* failureOf(stage("the summary").pipe(Effect.provideService(Path.Path, skewed)))
        assert.deepInclude(refused, {
          _tag: "OutsideWithin",
          operation: "publishOnce",
          path: real.join(outside, "4.txt"),
          within: capability.folder,
          actual: real.join(outside, "4.txt")
        })
        assert.isFalse(fs.existsSync(outside))
        assert.isFalse(fs.existsSync(real.join(capability.folder, "summaries")))
        // Negative control: with the platform's own Path the same staging publishes inside the folder.
        assert.strictEqual((yield* stage("the summary")).outcome, "Published")
      })
    ))

  it("staging_entries_refuse_before_touching_files: bad keys are InvalidInput at their entry; a forged capability NotMinted", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { capability } = yield* staging(world)
        const bad = { operation: operationId("compaction"), step: 0 }
        const entries = (
          given: PrivateSummaries.StagingKey,
          writer: PrivateSummaries.PrivateWriterCapability
        ): ReadonlyArray<readonly [string, Effect.Effect<unknown, unknown, Layer.Success<typeof platformLayer>>]> => [
          ["PrivateSummaries.stageOnce", PrivateSummaries.stageOnce(given, "x").pipe(PrivateSummaries.provide(writer))],
          ["PrivateSummaries.readStaged", PrivateSummaries.readStaged(given).pipe(PrivateSummaries.provide(writer))],
          ["PrivateSummaries.withdraw", PrivateSummaries.withdraw(given).pipe(PrivateSummaries.provide(writer))]
        ]
        for (const [entry, effect] of entries(bad, capability)) {
          const refused = yield* failureOf(effect)
          assert.deepInclude(refused, { _tag: "InvalidInput", entry, field: "key" })
        }
        const forged = { ...capability } as PrivateSummaries.PrivateWriterCapability
        for (const [entry, effect] of entries(key, forged)) {
          const refused = yield* failureOf(effect)
          assert.strictEqual(refused.reason, "NotMinted")
          assert.isTrue((refused.detail as string).startsWith(`${entry}: `), refused.detail as string)
        }
        assert.isFalse(fs.existsSync(path.join(capability.folder, "summaries")))
        // Negative control: the genuine capability and key stage.
        yield* PrivateSummaries.stageOnce(key, "x").pipe(PrivateSummaries.provide(capability))
        assert.isTrue(fs.existsSync(path.join(capability.folder, "summaries")))
      })
    ))

  it("staging_span_says_what_was_staged: operation, step, volume, size and outcome", () =>
    runInWorld((world) =>
      Effect.gen(function* () {
        const { stage } = yield* staging(world)
        const { exit, spans } = yield* traced(
          Effect.gen(function* () {
            yield* stage("the summary")
            yield* stage("the summary")
          })
        )
        assert.strictEqual(exit._tag, "Success")
        const stagings = spans
          .filter((span) => span.name === "PrivateSummaries.stageOnce")
          .map((span) => Object.fromEntries(span.attributes))
        const common = {
          "tessera.operation": "compaction",
          "tessera.step": 4,
          "tessera.volume": world.privateRef.volume,
          "tessera.staging.size": 11
        }
        assert.deepStrictEqual(stagings, [
          { ...common, "tessera.staging.outcome": "Published" },
          { ...common, "tessera.staging.outcome": "Existing" }
        ])
      })
    ))
})
