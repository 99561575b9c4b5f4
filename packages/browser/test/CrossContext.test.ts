/**
 * Guarantees that must hold across the origin's execution contexts, not
 * only between fibers of one page: dedicated workers racing to publish one
 * file, and a journal held by its sync access handle in one worker.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Report } from "../example/runExample.ts"
import { withRoot } from "./support.ts"

const worker = () => new Worker(new URL("./fixtures/raceWorker.ts", import.meta.url), { type: "module" })

const next = (target: Worker): Promise<string> =>
  new Promise((resolve) => {
    target.onmessage = (event: MessageEvent<string>) => resolve(event.data)
  })

/** Starts `count` workers racing to publish `final`, released together; their answers, and the file. */
const race = async (root: string, count: number, broken: boolean) => {
  const folder = `${root}/race`
  let dir = await navigator.storage.getDirectory()
  for (const name of folder.split("/").filter(Boolean)) dir = await dir.getDirectoryHandle(name, { create: true })
  const workers = Array.from({ length: count }, worker)
  try {
    await Promise.all(
      workers.map((one, index) => {
        const ready = next(one)
        one.postMessage({
          kind: "publish",
          folder,
          final: "summary.txt",
          content: `written by worker ${index}`,
          broken
        })
        return ready
      })
    )
    const answers = await Promise.all(
      workers.map((one) => {
        const answer = next(one)
        one.postMessage("go")
        return answer
      })
    )
    const content = await (await (await dir.getFileHandle("summary.txt")).getFile()).text()
    const names: Array<string> = []
    for await (const name of dir.keys()) names.push(name)
    return { answers, content, names }
  } finally {
    for (const one of workers) one.terminate()
  }
}

describe("across workers", () => {
  it("workers_race_publish_once: 6 dedicated workers publishing one name: exactly one Published, the others AlreadyExists, the file is the winner's", () =>
    withRoot("race", async (root) => {
      const { answers, content, names } = await race(root, 6, false)
      const winners = answers.flatMap((answer, index) => (answer === "Published" ? [index] : []))
      assert.strictEqual(winners.length, 1, answers.join(", "))
      assert.deepStrictEqual(
        answers.filter((answer) => answer !== "Published"),
        Array.from({ length: 5 }, () => "AlreadyExists")
      )
      assert.strictEqual(content, `written by worker ${winners[0]}`)
      assert.strictEqual(names.length, 6, "the final file and the losers' temporary files, left for them to inspect")
    }))

  it("negative control: the same race with check-then-write and no lock (broken wiring built in the worker fixture) has more than one winner", () =>
    withRoot("race-broken", async (root) => {
      const { answers } = await race(root, 6, true)
      assert.isAbove(answers.filter((answer) => answer === "Published").length, 1, answers.join(", "))
    }))

  it("worker_journal_sync_handle: a journal open in one worker (sync access handle) cannot be opened for writing in another; its entries are all there", () =>
    withRoot("journal", async (root) => {
      const folder = `${root}/journal`
      const [holder, second] = [worker(), worker()]
      try {
        const holding = next(holder)
        holder.postMessage({ kind: "journal", folder, task: "t1", entries: 20, hold: true })
        // The holder has appended its entries and keeps the journal open until it is released.
        assert.strictEqual(await holding, "Holding")
        let top = await navigator.storage.getDirectory()
        for (const name of folder.split("/").filter(Boolean)) top = await top.getDirectoryHandle(name)
        const refused = next(second)
        second.postMessage({ kind: "journal", folder, task: "t1", entries: 1, hold: false })
        const secondAnswer = await refused
        assert.match(secondAnswer, /^JournalIoError: .*NoModificationAllowedError/)
        const held = next(holder)
        holder.postMessage("release")
        assert.strictEqual(await held, "Appended 20")
        const text = await (await (await top.getFileHandle("t1.jsonl")).getFile()).text()
        assert.strictEqual(text.split("\n").filter(Boolean).length, 20)
      } finally {
        holder.terminate()
        second.terminate()
      }
    }))

  it("worker_harness_turn: a dedicated worker opens the browser harness and runs the example's turn (offload, compaction, journal on a sync access handle)", () =>
    withRoot("worker-harness", async (root) => {
      const runner = new Worker(new URL("./fixtures/harnessWorker.ts", import.meta.url), { type: "module" })
      try {
        const answer = await new Promise<{ ok: boolean; report?: Report; error?: string }>((resolve) => {
          runner.onmessage = (event) => resolve(event.data)
          runner.postMessage(root)
        })
        assert.isTrue(answer.ok, answer.error)
        const report = answer.report as Report
        assert.include(
          report.requests.map((request) => request.what),
          "summary request"
        )
        assert.match(report.finalStartsWith, /^summaries\/research-t1\/\d+\.txt$/)
        assert.isTrue(report.files.some((file) => file.file === "volumes/journal/research.jsonl"))
      } finally {
        runner.terminate()
      }
    }))
})
