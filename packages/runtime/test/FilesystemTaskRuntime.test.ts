import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { type Grant, HostAuthority, Ids, PrivateWriter, Volume } from "@tessera/core"
import type { Unauthorized } from "@tessera/core/Unauthorized"
import { FilesystemTaskRuntime, TaskHost } from "@tessera/runtime"
import type { FileSystem, Path } from "effect"
import { Effect, Layer, Option, Result, Schema } from "effect"
import * as fc from "fast-check"

// The bind function with a pluggable verdict is internal (the package blocks
// `./internal/*`), so the negative control reaches it by path. The `.js`
// spelling keeps tsc from rewriting a path into another project.

const agentId = Schema.decodeUnknownSync(Ids.AgentId)
const taskId = Schema.decodeUnknownSync(Ids.TaskId)
const volumeId = Schema.decodeUnknownSync(Ids.VolumeId)

const agent = agentId("researcher")
const otherAgent = agentId("someone-else")
const task = taskId("task-1")

type Services = FileSystem.FileSystem | Path.Path | HostAuthority.HostAuthority

const runWith =
  (authority: Layer.Layer<HostAuthority.HostAuthority>) =>
  <A, E>(effect: Effect.Effect<A, E, Services>): Promise<A> =>
    Effect.runPromise(effect.pipe(Effect.provide(Layer.mergeAll(NodeServices.layer, authority))))

const run = runWith(HostAuthority.permissive)

/** A fresh temporary folder for one test, removed when the test is done. */
const withTempDir = async <A>(body: (dir: string) => Promise<A>): Promise<A> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tessera-"))
  try {
    return await body(dir)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

const outcomeOf = <A, E extends { readonly _tag: string }>(effect: Effect.Effect<A, E, Services>) =>
  run(
    Effect.result(effect).pipe(
      Effect.map((result) => {
        if (Result.isSuccess(result)) return "accepted" as const
        const error: E = result.failure
        if (error._tag === "Unauthorized") return (error as unknown as Unauthorized).reason
        throw new Error(`unexpected failure: ${String(error)}`)
      })
    )
  )

const capability = (volume: Volume.VolumeRef, access: ReadonlyArray<Grant.Access>): Grant.Capability => ({
  volume,
  access
})

// ---------------------------------------------------------------------------
// The owner matrix, at the runtime level: real volumes in real stores.

type OwnerChoice = "task's agent" | "another agent" | "host"
type GrantChoice = "none" | "read" | "write" | "read+write"
/**
 * Outside custody comes in two forms: a volume of another store (its grant
 * issued by that store's own host), and an id this store never registered
 * (it has a data folder but no metadata; its grant can only be hand-made,
 * since no host issues grants on it).
 */
type CustodyChoice = "in" | "out: another store" | "out: unregistered id"

interface Case {
  readonly kind: Volume.VolumeKind
  readonly owner: OwnerChoice
  readonly grant: GrantChoice
  readonly custody: CustodyChoice
}

const ownerChoices: ReadonlyArray<OwnerChoice> = ["task's agent", "another agent", "host"]
const grantChoices: ReadonlyArray<GrantChoice> = ["none", "read", "write", "read+write"]
const custodyChoices: ReadonlyArray<CustodyChoice> = ["in", "out: another store", "out: unregistered id"]

const caseArbitrary: fc.Arbitrary<Case> = fc.record({
  kind: fc.constantFrom(...Volume.volumeKinds),
  owner: fc.constantFrom(...ownerChoices),
  grant: fc.constantFrom(...grantChoices),
  custody: fc.constantFrom(...custodyChoices)
})

/**
 * The documented rules, restated independently of the implementation: a
 * runtime's private volume must be in custody, AgentPrivate, owned by the
 * scope's own agent, and writable by the scope's task. The first rule
 * broken, in that order, is the reason.
 */
const oracle = (c: Case): "accepted" | Unauthorized["reason"] => {
  if (c.custody !== "in") return "OutOfCustody"
  if (c.kind !== "AgentPrivate") return "NotAgentPrivate"
  if (c.owner === "host") return "NotAgentOwned"
  if (c.owner === "another agent") return "NotOwnerBound"
  if (c.grant === "none" || c.grant === "read") return "MissingWriteGrant"
  return "accepted"
}

const accessOf = (grant: GrantChoice): ReadonlyArray<Grant.Access> =>
  grant === "none" ? [] : grant === "read" ? ["read"] : grant === "write" ? ["write"] : ["read", "write"]

const ownerOf = (owner: OwnerChoice): Volume.Owner =>
  owner === "host" ? Volume.hostOwner : Volume.agentOwner(owner === "task's agent" ? agent : otherAgent)

/** Two stores in one temporary folder; each case gets a volume id of its own. */
const matrixWorld = (dir: string) => {
  const rootA = path.join(dir, "a")
  const rootB = path.join(dir, "b")
  let next = 0
  const setUp = (c: Case) =>
    Effect.gen(function* () {
      const hostA = yield* TaskHost.open({ root: rootA })
      const hostB = yield* TaskHost.open({ root: rootB })
      const id = volumeId(`v${next++}`)
      const access = accessOf(c.grant)
      const capabilities = (ref: Volume.VolumeRef) => (access.length === 0 ? [] : [capability(ref, access)])
      switch (c.custody) {
        case "in": {
          const ref = yield* hostA.store.create({ id, kind: c.kind, owner: ownerOf(c.owner) })
          return { hostA, ref, scope: yield* hostA.issueScope(task, capabilities(ref), agent) }
        }
        // No host grants access to a volume outside its custody (issuing
        // fails), and a runtime accepts only scopes issued for its own store,
        // so out-of-custody cases run with a scope issued without that grant.
        case "out: another store": {
          const ref = yield* hostB.store.create({ id, kind: c.kind, owner: ownerOf(c.owner) })
          return { hostA, ref, scope: yield* hostA.issueScope(task, [], agent) }
        }
        case "out: unregistered id": {
          fs.mkdirSync(path.join(rootA, "volumes", id), { recursive: true })
          const ref: Volume.VolumeRef = { store: hostA.store.id, volume: id }
          return { hostA, ref, scope: yield* hostA.issueScope(task, [], agent) }
        }
      }
    })
  return { rootA, setUp }
}

type Opener = (
  world: ReturnType<typeof matrixWorld>,
  c: Case
) => Effect.Effect<FilesystemTaskRuntime.FilesystemTaskRuntime, unknown, Services>

/** The public constructor, on the store folder. */
const viaOpen: Opener = (world, c) =>
  world
    .setUp(c)
    .pipe(
      Effect.flatMap(({ ref, scope }) =>
        FilesystemTaskRuntime.open({ root: world.rootA, private: Option.some(ref), scope })
      )
    )

/** The second public constructor, on an existing host. */
const viaFromHost: Opener = (world, c) =>
  world
    .setUp(c)
    .pipe(
      Effect.flatMap(({ hostA, ref, scope }) =>
        FilesystemTaskRuntime.fromHost(hostA, { private: Option.some(ref), scope })
      )
    )

/** Deliberately broken wiring: the verdict forgets the owner-bound check. */
const skipsOwnerCheck: PrivateWriter.PrivateWriterVerdict = (candidate) =>
  PrivateWriter.checkPrivateWriter({
    ...candidate,
    custody: Option.map(candidate.custody, (descriptor) =>
      descriptor.owner._tag === "Agent"
        ? { ...descriptor, owner: Volume.agentOwner(candidate.scope.agent) }
        : descriptor
    )
  })

/**
 * The open path rebuilt in this test with the broken verdict in place of
 * the real one: the store's custody facts, then the verdict, and the
 * accepted writer as the runtime's private volume.
 */
const viaBrokenVerdict: Opener = (world, c) =>
  world.setUp(c).pipe(
    Effect.flatMap(({ hostA, ref, scope }) =>
      hostA.store.custody(ref).pipe(
        Effect.flatMap((custody) => Effect.fromResult(skipsOwnerCheck({ ref, custody, scope }))),
        Effect.map(
          (writer) => ({ privateVolume: Option.some(writer) }) as unknown as FilesystemTaskRuntime.FilesystemTaskRuntime
        )
      )
    )
  )

const verdictOf = async (opener: Opener, world: ReturnType<typeof matrixWorld>, c: Case) => {
  const outcome = await outcomeOf(
    opener(world, c).pipe(
      Effect.map((runtime) => {
        // An accepted runtime holds exactly the volume it was opened with.
        if (Option.isNone(runtime.privateVolume)) throw new Error("accepted without a private volume")
        return runtime
      })
    ) as Effect.Effect<FilesystemTaskRuntime.FilesystemTaskRuntime, { readonly _tag: string }, Services>
  )
  return outcome
}

const matrixProperty = (opener: Opener, world: ReturnType<typeof matrixWorld>) =>
  fc.asyncProperty(caseArbitrary, async (c) => (await verdictOf(opener, world, c)) === oracle(c))

describe("FilesystemTaskRuntime private volume", () => {
  it("private_content_owner_matrix: open's verdict on kind x owner x grant x custody matches the oracle", () =>
    withTempDir(async (dir) => {
      await fc.assert(matrixProperty(viaOpen, matrixWorld(dir)), { numRuns: 100 })
    }))

  it("private_content_owner_matrix, exhaustive: all 144 cases (96 with custody in/out, out in two forms) via fromHost", () =>
    withTempDir(async (dir) => {
      const world = matrixWorld(dir)
      let cases = 0
      for (const kind of Volume.volumeKinds)
        for (const owner of ownerChoices)
          for (const grant of grantChoices)
            for (const custody of custodyChoices) {
              const c = { kind, owner, grant, custody }
              assert.strictEqual(await verdictOf(viaFromHost, world, c), oracle(c), JSON.stringify(c))
              cases++
            }
      assert.strictEqual(cases, Volume.volumeKinds.length * 3 * 4 * 3)
    }))

  it("negative control: the owner matrix catches a bind that skips the owner check", () =>
    withTempDir(async (dir) => {
      const outcome = await fc.check(matrixProperty(viaBrokenVerdict, matrixWorld(dir)), { numRuns: 150, seed: 7 })
      assert.isTrue(outcome.failed, "the matrix property must fail against a broken verdict")
      const [counterexample] = outcome.counterexample ?? []
      assert.strictEqual(counterexample?.kind, "AgentPrivate")
      assert.strictEqual(counterexample?.owner, "another agent")
      assert.strictEqual(counterexample?.custody, "in")
    }))

  it("opening with a private volume that has no grants is Unauthorized MissingWriteGrant", () =>
    withTempDir(async (dir) => {
      const reason = await outcomeOf(
        Effect.gen(function* () {
          const host = yield* TaskHost.open({ root: dir })
          const ref = yield* host.store.create({
            id: volumeId("private"),
            kind: "AgentPrivate",
            owner: Volume.agentOwner(agent)
          })
          const scope = yield* host.issueScope(task, [], agent)
          return yield* FilesystemTaskRuntime.open({ root: dir, private: Option.some(ref), scope })
        })
      )
      assert.strictEqual(reason, "MissingWriteGrant")
    }))

  it("private: Option.none() opens without a private volume", () =>
    withTempDir(async (dir) => {
      const runtime = await run(
        Effect.gen(function* () {
          const host = yield* TaskHost.open({ root: dir })
          const scope = yield* host.issueScope(task, [], agent)
          return yield* FilesystemTaskRuntime.open({ root: dir, private: Option.none(), scope })
        })
      )
      assert.isTrue(Option.isNone(runtime.privateVolume))
      assert.isTrue(Option.isNone(runtime.output))
    }))

  it("reopen: owners and kinds survive a new runtime opened on the same folder", () =>
    withTempDir(async (dir) => {
      const first = await run(
        Effect.gen(function* () {
          const host = yield* TaskHost.open({ root: dir })
          const ref = yield* host.store.create({
            id: volumeId("private"),
            kind: "AgentPrivate",
            owner: Volume.agentOwner(agent)
          })
          yield* host.store.create({ id: volumeId("journal"), kind: "Journal", owner: Volume.hostOwner })
          const scope = yield* host.issueScope(task, [capability(ref, ["read", "write"])], agent)
          const runtime = yield* FilesystemTaskRuntime.open({ root: dir, private: Option.some(ref), scope })
          return { ref, scope, runtime }
        })
      )
      const second = await run(
        FilesystemTaskRuntime.open({ root: dir, private: Option.some(first.ref), scope: first.scope })
      )
      assert.strictEqual(second.host.store.id, first.runtime.host.store.id)
      assert.deepStrictEqual(
        Option.map(second.privateVolume, (writer) => writer.descriptor),
        Option.some({ id: volumeId("private"), kind: "AgentPrivate" as const, owner: Volume.agentOwner(agent) })
      )
      assert.deepStrictEqual(await run(second.host.store.list()), await run(first.runtime.host.store.list()))
      assert.deepStrictEqual(
        (await run(second.host.store.list())).map((d) => [d.id, d.kind, d.owner._tag]),
        [
          ["journal", "Journal", "Host"],
          ["private", "AgentPrivate", "Agent"]
        ]
      )
    }))

  it("bad input: opening on a corrupted private volume's metadata names the file and field and rewrites nothing", () =>
    withTempDir(async (dir) => {
      const { ref, scope } = await run(
        Effect.gen(function* () {
          const host = yield* TaskHost.open({ root: dir })
          const ref = yield* host.store.create({
            id: volumeId("private"),
            kind: "AgentPrivate",
            owner: Volume.agentOwner(agent)
          })
          return { ref, scope: yield* host.issueScope(task, [capability(ref, ["write"])], agent) }
        })
      )
      const file = path.join(dir, "meta", "volumes", "private.json")
      // A task that wanted the volume for itself edited the owner by hand.
      fs.writeFileSync(file, '{"id": "private", "kind": "AgentPrivate", "owner": {"_tag": "Agent", "agent": ""}}')
      const before = fs.readFileSync(file)
      const beforeStat = fs.statSync(file)
      const error = await run(Effect.flip(FilesystemTaskRuntime.open({ root: dir, private: Option.some(ref), scope })))
      assert.strictEqual(error._tag, "VolumeMetadataInvalid")
      if (error._tag === "VolumeMetadataInvalid") {
        assert.strictEqual(error.file, file)
        assert.strictEqual(error.field, "owner.agent")
      }
      assert.deepStrictEqual(fs.readFileSync(file), before)
      assert.strictEqual(fs.statSync(file).mtimeMs, beforeStat.mtimeMs)
      assert.strictEqual(fs.statSync(file).ino, beforeStat.ino)
    }))
})

// ---------------------------------------------------------------------------
// Output bindings and the host authority.

const journalWorld = (root: string) =>
  Effect.gen(function* () {
    const host = yield* TaskHost.open({ root })
    const journal = yield* host.store.create({ id: volumeId("journal"), kind: "Journal", owner: Volume.hostOwner })
    const output = yield* host.store.create({ id: volumeId("output"), kind: "Output", owner: Volume.hostOwner })
    return { host, journal, output }
  })

describe("FilesystemTaskRuntime output binding and authority", () => {
  it("output binding on an ungranted journal volume is Unauthorized MissingWriteGrant, at open and at bindTask", () =>
    withTempDir(async (dir) => {
      const { host, journal } = await run(journalWorld(dir))
      const scope = await run(host.issueScope(task, [], agent))
      const atOpen = await outcomeOf(
        FilesystemTaskRuntime.open({ root: dir, private: Option.none(), scope, output: Option.some(journal) })
      )
      assert.strictEqual(atOpen, "MissingWriteGrant")

      const runtime = await run(FilesystemTaskRuntime.fromHost(host, { private: Option.none(), scope }))
      const atBind = await outcomeOf(runtime.bindTask({ scope, output: Option.some(journal) }))
      assert.strictEqual(atBind, "MissingWriteGrant")
      // Control: the same journal binding with a write grant is accepted.
      const granted = await run(host.issueScope(task, [capability(journal, ["write"])], agent))
      const bound = await run(runtime.bindTask({ scope: granted, output: Option.some(journal) }))
      assert.deepStrictEqual(
        Option.map(bound.output, (binding) => binding.ref),
        Option.some(journal)
      )
    }))

  it("an output binding outside custody is Unauthorized OutOfCustody", () =>
    withTempDir(async (dir) => {
      const { host } = await run(journalWorld(path.join(dir, "a")))
      const elsewhere = await run(journalWorld(path.join(dir, "b")))
      // This store's host cannot grant the other store's volume, so the
      // runtime's scope holds no grant on it: custody is what refuses it.
      const scope = await run(host.issueScope(task, [], agent))
      const reason = await outcomeOf(
        FilesystemTaskRuntime.fromHost(host, {
          private: Option.none(),
          scope,
          output: Option.some(elsewhere.output)
        })
      )
      assert.strictEqual(reason, "OutOfCustody")
      // A scope issued by the other store's host is not accepted here at all.
      const foreignScope = await run(elsewhere.host.issueScope(task, [capability(elsewhere.output, ["write"])], agent))
      const foreign = await outcomeOf(
        FilesystemTaskRuntime.fromHost(host, { private: Option.none(), scope: foreignScope })
      )
      assert.strictEqual(foreign, "ScopeNotIssued")
    }))

  it("with forbidJournalGrants, issuing a grant on the journal volume is GrantForbidden; permissive issues it", () =>
    withTempDir(async (dir) => {
      const { journal, output } = await run(journalWorld(dir))
      const forbidding = runWith(HostAuthority.forbidJournalGrants)
      for (const access of [["read"], ["write"], ["read", "write"]] as const) {
        const error = await forbidding(
          Effect.flip(
            TaskHost.open({ root: dir }).pipe(
              Effect.flatMap((host) => host.issueScope(task, [capability(journal, access)], agent))
            )
          )
        )
        assert.strictEqual(error._tag, "Unauthorized")
        if (error._tag === "Unauthorized") {
          assert.strictEqual(error.reason, "GrantForbidden")
          assert.include(error.detail, "journal")
          assert.deepStrictEqual(error.volume, journal)
        }
      }
      // The same authority still issues grants on other volumes...
      const scope = await forbidding(
        TaskHost.open({ root: dir }).pipe(
          Effect.flatMap((host) => host.issueScope(task, [capability(output, ["write"])], agent))
        )
      )
      assert.deepStrictEqual(scope.grants, [{ task, volume: output, access: ["write"] }])
      // ...and the permissive authority issues the journal grant.
      const permissive = await run(
        TaskHost.open({ root: dir }).pipe(
          Effect.flatMap((host) => host.issueScope(task, [capability(journal, ["write"])], agent))
        )
      )
      assert.deepStrictEqual(permissive.grants, [{ task, volume: journal, access: ["write"] }])
    }))

  it("issueScope refuses a volume outside custody with OutOfCustody and issues nothing", () =>
    withTempDir(async (dir) => {
      const { host, output } = await run(journalWorld(path.join(dir, "a")))
      const elsewhere = await run(journalWorld(path.join(dir, "b")))
      const unregistered: Volume.VolumeRef = { store: host.store.id, volume: volumeId("ghost") }
      for (const ref of [elsewhere.output, unregistered]) {
        const reason = await outcomeOf(
          host.issueScope(task, [capability(output, ["write"]), capability(ref, ["write"])], agent)
        )
        assert.strictEqual(reason, "OutOfCustody")
      }
    }))
})

// ---------------------------------------------------------------------------
// Task contexts.

describe("FilesystemTaskRuntime.bindTask", () => {
  it("binds task id, agent, grants, created private content and output, and keeps the runtime's verified writer", () =>
    withTempDir(async (dir) => {
      const { runtime, scope, privateRef, output, created } = await run(
        Effect.gen(function* () {
          const host = yield* TaskHost.open({ root: dir })
          const privateRef = yield* host.store.create({
            id: volumeId("private"),
            kind: "AgentPrivate",
            owner: Volume.agentOwner(agent)
          })
          const output = yield* host.store.create({ id: volumeId("out"), kind: "Output", owner: Volume.hostOwner })
          const created = yield* host.store.create({
            id: volumeId("created"),
            kind: "AgentPrivate",
            owner: Volume.agentOwner(agent)
          })
          const scope = yield* host.issueScope(
            task,
            [capability(privateRef, ["write"]), capability(output, ["write"]), capability(created, ["write"])],
            agent
          )
          const runtime = yield* FilesystemTaskRuntime.fromHost(host, {
            private: Option.some(privateRef),
            scope,
            output: Option.some(output)
          })
          return { runtime, scope, privateRef, output, created }
        })
      )
      const context = await run(runtime.bindTask({ scope, createdPrivate: [created] }))
      assert.strictEqual(context.task, task)
      assert.strictEqual(context.agent, agent)
      assert.deepStrictEqual(context.grants, scope.grants)
      assert.deepStrictEqual(context.createdPrivate, [created])
      // Omitted output: the runtime's binding, re-checked against the task's scope.
      assert.deepStrictEqual(
        Option.map(context.output, (binding) => binding.ref),
        Option.some(output)
      )
      assert.strictEqual(context.runtime, runtime)
      assert.deepStrictEqual(
        Option.map(context.runtime.privateVolume, (writer) => writer.ref),
        Option.some(privateRef)
      )
      assert.isTrue(Object.isFrozen(context))

      const explicitNone = await run(runtime.bindTask({ scope, output: Option.none() }))
      assert.isTrue(Option.isNone(explicitNone.output))
      assert.deepStrictEqual(explicitNone.createdPrivate, [])
    }))

  it("a task without its own write grant cannot inherit the runtime's output binding", () =>
    withTempDir(async (dir) => {
      const reason = await outcomeOf(
        Effect.gen(function* () {
          const host = yield* TaskHost.open({ root: dir })
          const output = yield* host.store.create({ id: volumeId("out"), kind: "Output", owner: Volume.hostOwner })
          const scope = yield* host.issueScope(task, [capability(output, ["write"])], agent)
          const runtime = yield* FilesystemTaskRuntime.fromHost(host, {
            private: Option.none(),
            scope,
            output: Option.some(output)
          })
          // Another task, issued no grant on the output, inherits nothing.
          const otherTask = taskId("task-2")
          return yield* runtime.bindTask({ scope: yield* host.issueScope(otherTask, [], agent) })
        })
      )
      assert.strictEqual(reason, "MissingWriteGrant")
    }))

  it("a scope built by hand (not issued by a host) is Unauthorized ScopeNotIssued at open, fromHost and bindTask", () =>
    withTempDir(async (dir) => {
      const { host, journal, output } = await run(journalWorld(dir))
      // On a host that forbids journal grants, a hand-built scope claims one anyway.
      const forged: Grant.Scope = { task, agent, grants: [{ task, volume: journal, access: ["read", "write"] }] }
      const forbidding = runWith(HostAuthority.forbidJournalGrants)
      const atOpen = await forbidding(
        Effect.flip(FilesystemTaskRuntime.open({ root: dir, private: Option.none(), scope: forged }))
      )
      assert.strictEqual(atOpen._tag === "Unauthorized" ? atOpen.reason : atOpen._tag, "ScopeNotIssued")
      assert.strictEqual(
        await outcomeOf(FilesystemTaskRuntime.fromHost(host, { private: Option.none(), scope: forged })),
        "ScopeNotIssued"
      )
      // A copy of an issued scope is not the issued scope either.
      const issued = await run(host.issueScope(task, [capability(output, ["write"])], agent))
      const runtime = await run(FilesystemTaskRuntime.fromHost(host, { private: Option.none(), scope: issued }))
      assert.strictEqual(await outcomeOf(runtime.bindTask({ scope: { ...issued } })), "ScopeNotIssued")
      assert.strictEqual(await outcomeOf(runtime.bindTask({ scope: issued })), "accepted")
    }))
})
