/**
 * One runtime per namespace in the browser: the Web Lock namespace lock and
 * the browser harness that takes it, in headless Chromium.
 */
import { assert, describe, it } from "@effect/vitest"
import { BrowserHarness, BrowserPlatform, WebLockNamespace } from "@tessera/browser"
import { DurableFiles, Ids } from "@tessera/core"
import { Journal } from "@tessera/runtime"
import { Context, Effect, Exit, FileSystem, Layer, Option, Schema, Scope } from "effect"
import { withRoot } from "./support.ts"

const agent = Schema.decodeUnknownSync(Ids.AgentId)("researcher")
const run = <A, E>(effect: Effect.Effect<A, E, Scope.Scope>) => Effect.runPromise(Effect.scoped(effect))

/** The namespace lock held in a scope the test closes by hand. */
const holdOpen = async (namespace: string) => {
  const scope = Effect.runSync(Scope.make())
  const held = await Effect.runPromise(WebLockNamespace.acquire(namespace).pipe(Scope.provide(scope)))
  return { held, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

describe("the namespace lock (Web Locks)", () => {
  it("namespace_in_use: a second holder fails NamespaceInUse at once, naming the namespace; after release it opens", async () => {
    const namespace = `ns-${crypto.randomUUID()}`
    const first = await holdOpen(namespace)
    const second = await Effect.runPromise(Effect.scoped(Effect.flip(WebLockNamespace.acquire(namespace))))
    assert.strictEqual(second._tag, "NamespaceInUse")
    if (second._tag === "NamespaceInUse") {
      assert.strictEqual(second.namespace, namespace)
      assert.strictEqual(second.lock, WebLockNamespace.lockName(namespace))
      assert.match(second.message, /namespace in use/)
    }
    await first.close()
    const third = await run(WebLockNamespace.acquire(namespace))
    assert.strictEqual(third.namespace, namespace)
  })

  it("negative control: the same scenario on a lock taken in shared mode (broken wiring built here) lets both in", async () => {
    const namespace = `ns-${crypto.randomUUID()}`
    const lock = WebLockNamespace.lockName(namespace)
    // The broken wiring: a shared lock, as a holder that forgot `exclusive` would take it.
    const grant = () =>
      new Promise<boolean>((resolve) => {
        void navigator.locks.request(lock, { mode: "shared", ifAvailable: true }, async (granted) => {
          resolve(granted !== null)
          await new Promise((done) => setTimeout(done, 200))
        })
      })
    const both = await Promise.all([grant(), grant()])
    assert.deepStrictEqual(
      both,
      [true, true],
      "shared locks admit a second runtime: the exclusive mode is what refuses it"
    )
  })

  it("a worker of the same origin is refused the namespace a page holds", async () => {
    const namespace = `ns-${crypto.randomUUID()}`
    const held = await holdOpen(namespace)
    try {
      const worker = new Worker(new URL("./fixtures/lockWorker.ts", import.meta.url), { type: "module" })
      const answer = await new Promise<string>((resolve) => {
        worker.onmessage = (event: MessageEvent<string>) => resolve(event.data)
        worker.postMessage(namespace)
      })
      worker.terminate()
      assert.strictEqual(answer, "NamespaceInUse")
    } finally {
      await held.close()
    }
  })
})

describe("the browser harness", () => {
  it("browser_harness: opens a namespace with the standard volumes and a runtime whose private volume is the agent's scratch; a second open is NamespaceInUse", () =>
    withRoot("harness", (root) =>
      run(
        Effect.gen(function* () {
          const harness = yield* BrowserHarness.open({ namespace: "work", agent, root })
          assert.strictEqual(harness.folder, `${root}/work`)
          assert.isTrue(Option.isSome(harness.runtime.privateVolume))
          assert.deepStrictEqual(
            Option.map(harness.runtime.privateVolume, (verified) => verified.ref),
            Option.some(harness.volumes.scratch)
          )
          const facts = yield* harness.host.store.custody(harness.volumes.scratch)
          assert.deepStrictEqual(
            Option.map(facts, (one) => one.kind),
            Option.some("AgentPrivate" as const)
          )
          assert.deepStrictEqual(
            Option.map(facts, (one) => one.owner),
            Option.some({ _tag: "Agent" as const, agent })
          )
          const second = yield* Effect.flip(Effect.scoped(BrowserHarness.open({ namespace: "work", agent, root })))
          assert.strictEqual(second._tag, "NamespaceInUse")
        }).pipe(Effect.provide(BrowserPlatform.layer))
      )
    ))

  it("task_journal_lock: a task's journal whose Web Lock another client holds fails TaskInUse and writes nothing", () =>
    withRoot("harness-task", (root) =>
      run(
        Effect.gen(function* () {
          const harness = yield* BrowserHarness.open({ namespace: "work", agent, root })
          const task = Schema.decodeUnknownSync(Ids.TaskId)("t1")
          // Another client of the origin (here, a lock request made outside the harness) holds the task.
          let release: () => void = () => undefined
          let released: Promise<unknown> = Promise.resolve()
          yield* Effect.promise(
            () =>
              new Promise<void>((granted) => {
                released = navigator.locks.request("tessera-task:work/t1", () => {
                  granted()
                  return new Promise<void>((done) => {
                    release = done
                  })
                })
              })
          )
          const refused = yield* Effect.flip(Effect.scoped(Layer.build(harness.journalLayer(task))))
          assert.strictEqual(refused._tag, "TaskInUse")
          const fs = yield* FileSystem.FileSystem
          assert.isFalse(yield* fs.exists(`${harness.journalFolder}/t1.jsonl`), "nothing was written")
          release()
          yield* Effect.promise(() => released)
          const opened = yield* Effect.scoped(
            Effect.map(Layer.build(harness.journalLayer(task)), (context) => Context.get(context, Journal.Journal).task)
          )
          assert.strictEqual(opened, task)
        }).pipe(Effect.provide(BrowserPlatform.layer))
      )
    ))

  it("harness_leftovers: opening removes the temporary names a closed tab left, and keeps every other file", () =>
    withRoot("harness-leftovers", (root) =>
      run(
        Effect.gen(function* () {
          const fs = yield* FileSystem.FileSystem
          const output = yield* Effect.scoped(
            Effect.flatMap(BrowserHarness.open({ namespace: "work", agent, root }), (harness) =>
              harness.host.store.folderOf(harness.volumes.output)
            )
          )
          const leftover = `${output}/${DurableFiles.temporaryName("report.txt")}`
          yield* fs.writeFileString(leftover, "cut short")
          yield* fs.writeFileString(`${output}/report.txt`, "content")
          yield* fs.writeFileString(`${output}/.hidden-but-content`, "content")
          yield* Effect.scoped(BrowserHarness.open({ namespace: "work", agent, root }))
          assert.isFalse(yield* fs.exists(leftover), "the temporary name is gone")
          assert.deepStrictEqual((yield* fs.readDirectory(output)).sort(), [".hidden-but-content", "report.txt"])
        }).pipe(Effect.provide(BrowserPlatform.layer))
      )
    ))

  it("the harness's runtime refuses another agent's private volume, as every runtime does", () =>
    withRoot("harness-refusal", (root) =>
      run(
        Effect.gen(function* () {
          const harness = yield* BrowserHarness.open({ namespace: "work", agent, root })
          const scope = yield* harness.host.issueScope(
            Schema.decodeUnknownSync(Ids.TaskId)("borrower"),
            [{ volume: harness.volumes.scratch, access: ["write"] }],
            Schema.decodeUnknownSync(Ids.AgentId)("reviewer")
          )
          const refused = yield* Effect.flip(
            harness.openRuntime({ private: Option.some(harness.volumes.scratch), scope })
          )
          assert.strictEqual(refused._tag, "Unauthorized")
        }).pipe(Effect.provide(BrowserPlatform.layer))
      )
    ))
})
