/**
 * What the shared folder must guarantee (see `SharedStore`), checked with
 * several processes racing on one folder: exclusive create, publication by
 * hard link, replacement by rename, durable and visible writes, and a store
 * opened by several runners at once.
 *
 * The folder is a fresh local temporary folder; set `TESSERA_SHARED_DIR` to
 * a folder on the mount the runners will share (NFS, CephFS, ...) to check
 * that mount instead.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { Journal } from "@tessera/runtime"
import { SharedStore } from "@tessera/workflow"
import { Effect } from "effect"
import * as world from "./support/world.ts"

const participant = path.join(import.meta.dirname, "fixtures", "sharedFs.ts")
const racers = 3

/** A fresh folder on the shared mount (or a local temporary folder), removed afterwards. */
const sharedDir = Effect.acquireRelease(
  Effect.sync(() =>
    fs.realpathSync(fs.mkdtempSync(path.join(process.env.TESSERA_SHARED_DIR ?? os.tmpdir(), "tessera-shared-")))
  ),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

/** Starts `racers` processes on `operation`, releases them together, and returns each one's outcome. */
const race = (operation: string, folder: string) =>
  Effect.promise(async () => {
    const children = Array.from({ length: racers }, (_, id) => {
      const child = spawn(process.execPath, [participant, operation, folder, String(id)], {
        stdio: ["ignore", "pipe", "inherit"]
      })
      let output = ""
      child.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString()
      })
      return new Promise<{ readonly id: string; readonly result: string }>((resolve, reject) =>
        child.once("exit", (code) =>
          code === 0 ? resolve(JSON.parse(output.trim())) : reject(new Error(`participant ${id} exited ${code}`))
        )
      )
    })
    // Every participant is started and polling before the folder says go.
    const ready = () => Array.from({ length: racers }, (_, id) => fs.existsSync(path.join(folder, `ready-${id}`)))
    while (!ready().every(Boolean)) await new Promise((resolve) => setTimeout(resolve, 10))
    fs.writeFileSync(path.join(folder, "go"), "")
    return Promise.all(children)
  })

const results = (outcomes: ReadonlyArray<{ readonly result: string }>) => outcomes.map((outcome) => outcome.result)

describe("the shared folder's contract, with processes racing", () => {
  it.live("shared_fs_exclusive_create_has_one_winner", () =>
    Effect.gen(function* () {
      const dir = yield* sharedDir
      const outcomes = results(yield* race("exclusive", dir))
      assert.strictEqual(outcomes.filter((result) => result === "won").length, 1, outcomes.join(", "))
      assert.strictEqual(outcomes.filter((result) => result === "lost").length, racers - 1, outcomes.join(", "))
    }).pipe(Effect.scoped)
  )

  it.live("shared_fs_link_publishes_once_whole", () =>
    Effect.gen(function* () {
      const dir = yield* sharedDir
      const outcomes = yield* race("publish", dir)
      const winners = outcomes.filter((outcome) => outcome.result === "won")
      assert.strictEqual(winners.length, 1, results(outcomes).join(", "))
      // The final name holds the winner's whole body, synced and visible to this (another) process.
      const text = fs.readFileSync(path.join(dir, "final"), "utf8")
      assert.strictEqual(text, `${winners[0]?.id}:${"x".repeat(64 * 1024)}`)
    }).pipe(Effect.scoped)
  )

  it.live("shared_fs_rename_replaces_atomically", () =>
    Effect.gen(function* () {
      const dir = yield* sharedDir
      const final = path.join(dir, "replaced")
      fs.writeFileSync(final, "old")
      const seen = new Set<string>()
      const reading = setInterval(() => {
        const text = fs.readFileSync(final, "utf8")
        seen.add(text === "old" ? "old" : text.endsWith("x".repeat(64 * 1024)) ? "whole" : `torn (${text.length})`)
      }, 1)
      const outcomes = results(yield* race("replace", dir))
      clearInterval(reading)
      assert.deepStrictEqual(
        outcomes,
        Array.from({ length: racers }, () => "won")
      )
      const torn = [...seen].filter((text) => text.startsWith("torn"))
      assert.deepStrictEqual(torn, [], "a reader never sees a mix")
      assert.match(fs.readFileSync(final, "utf8"), /^\d:x+$/)
    }).pipe(Effect.scoped)
  )

  it.live("shared_fs_negative_control_check_then_write_has_several_winners", () =>
    Effect.gen(function* () {
      const dir = yield* sharedDir
      const outcomes = results(yield* race("naive", dir))
      assert.isAbove(outcomes.filter((result) => result === "won").length, 1, outcomes.join(", "))
    }).pipe(Effect.scoped)
  )

  it.live("shared_store_opens_on_several_runners_at_once", () =>
    Effect.gen(function* () {
      const dir = yield* sharedDir
      const open = SharedStore.open({
        root: path.join(dir, "store"),
        agent: world.agentId("agent-1"),
        config: world.config(path.join(dir, "effects.log"))
      })
      const stores = yield* Effect.all([open, open, open, open], { concurrency: "unbounded" })
      const ids = new Set(stores.map((store) => store.host.store.id))
      assert.strictEqual(ids.size, 1, "one store, whoever created it")
      const volumes = yield* stores[0]?.host.store.list() ?? Effect.succeed([])
      assert.deepStrictEqual(volumes.map((volume) => volume.kind).sort(), ["AgentPrivate", "Journal", "Output"])
      // A journal line one runner synced is there for another runner that opens the journal afterwards.
      const task = world.taskId("shared-journal")
      yield* Effect.scoped(
        Effect.flatMap(Journal.open({ folder: stores[0]?.journalFolder ?? "", task }), (journal) => journal.openTurn)
      )
      const entries = yield* Journal.readEntries({ folder: stores[1]?.journalFolder ?? "", task })
      assert.deepStrictEqual(
        entries.map((entry) => entry._tag),
        ["TurnOpened"]
      )
    }).pipe(Effect.scoped, Effect.provide(world.platformLayer))
  )
})
