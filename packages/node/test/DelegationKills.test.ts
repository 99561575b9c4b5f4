/**
 * The kill test of delegation: a real child process (fixtures/delegationCrash.ts)
 * runs a parent that delegates to two children at once through the front
 * door, and is killed with SIGKILL at random points (a random time after
 * the front door is open, or a few milliseconds after a child's tool
 * started), then started again until it answers, in fresh folders, each
 * killed up to three times.
 *
 * What must hold after every trial, against the uninterrupted run:
 *
 * - the same final answer;
 * - per lane (the parent, the scout, the critic: their requests interleave
 *   as the children run at once, each lane's own order is fixed), the
 *   requests the model received equal the uninterrupted run's, where one
 *   request may appear twice in a row only across a kill: the last request
 *   of the lane a killed start sent, sent again, identical, as the first of
 *   the lane by the next start (the request got no response the journal
 *   kept, and a resume sends a lost request again; anything else is a
 *   request the uninterrupted run did not send);
 * - each child tool call ran at least once and at most once plus once per
 *   resume that found it in flight (called, no result, when a `TurnResumed`
 *   was journaled: an idempotent call in flight at a kill is run again),
 *   and no call the uninterrupted run did not make ran at all; the same
 *   bound on every call in every journal (the parent's `delegate` too),
 *   each with exactly one result;
 * - the children are exactly the uninterrupted run's two child tasks, and
 *   every journal (the parent's, each child's) ends with a closed turn and
 *   abandoned none.
 *
 * The kill plan comes from a seeded PRNG; the seed and the plans are printed
 * on failure (set `TESSERA_DELEGATION_KILLS_SEED` to replay the same plan:
 * where a kill lands still depends on timing). The negative control runs
 * the same kills on broken wiring (children named afresh on every call).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Journal, type JournalEntry } from "@tessera/runtime"
import { Effect } from "effect"
import * as Killable from "./support/killableFixture.ts"
import { taskId, withRoot } from "./support/temp.ts"

const fixture = path.join(import.meta.dirname, "fixtures", "delegationCrash.ts")
type Wiring = "sound" | "renaming"
// Where the fixture keeps its task (the front door's default namespace).
const parentTask = "plan-1"
const journalFolder = (stateDir: string) => path.join(stateDir, "tessera", "volumes", "journal")

type KillPlan = Killable.KillPlan<"ready" | "run">

const runFixture = (
  stateDir: string,
  start: number,
  wiring: Wiring,
  plan: KillPlan | undefined
): Promise<Killable.FixtureRun> =>
  Killable.runFixture({
    fixture,
    args: [stateDir, String(start), wiring],
    env: { NODE_COMPILE_CACHE: path.join(stateDir, "..", "compile-cache") },
    kill: plan,
    // The fixture ends with a line `done <answer as JSON>`.
    doneMarker: "\ndone "
  })

/** Half the kills anywhere in the run (up to its uninterrupted length), half inside a child's tool call. */
const planFrom = (random: () => number, workMs: number): KillPlan =>
  random() < 0.5
    ? { anchor: "ready", nth: 1, delayMs: Math.floor(random() * workMs) }
    : { anchor: "run", nth: 1 + Math.floor(random() * 3), delayMs: Math.floor(random() * 10) }

const lines = (file: string): ReadonlyArray<ReadonlyArray<string>> =>
  fs.existsSync(file)
    ? fs
        .readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line.length > 0)
        .map((line) => line.split(" "))
    : []

/** A request the model received: which start sent it, its lane, its digest (exact, or with child names out). */
interface Sent {
  readonly start: number
  readonly lane: string
  readonly digest: string
  readonly nameFree: string
}

/** What a folder holds after its last start: the answer, the fixture's logs and every task's journal. */
interface Evidence {
  readonly answer: string
  readonly kills: number
  readonly requests: ReadonlyArray<Sent>
  /** `<lane> <tool> <call id>` and the task, per time a child tool's handler ran. */
  readonly runs: ReadonlyArray<{ readonly key: string; readonly task: string }>
  readonly journals: ReadonlyMap<string, ReadonlyArray<JournalEntry.Entry>>
}

const evidenceOf = async (stateDir: string, answer: string, kills: number): Promise<Evidence> => {
  const journals = new Map<string, ReadonlyArray<JournalEntry.Entry>>()
  for (const file of fs.readdirSync(journalFolder(stateDir)).filter((name) => name.endsWith(".jsonl"))) {
    const task = file.slice(0, -".jsonl".length)
    journals.set(
      task,
      await Effect.runPromise(
        Journal.readEntries({ folder: journalFolder(stateDir), task: taskId(task) }).pipe(
          Effect.provide(NodeServices.layer)
        )
      )
    )
  }
  return {
    answer,
    kills,
    requests: lines(path.join(stateDir, "requests.log")).map(([start, lane, digest, nameFree]) => ({
      start: Number(start),
      lane: lane ?? "",
      digest: digest ?? "",
      nameFree: nameFree ?? ""
    })),
    runs: lines(path.join(stateDir, "runs.log")).map(([, lane, tool, task, callId]) => ({
      key: `${lane} ${tool} ${callId}`,
      task: task ?? ""
    })),
    journals
  }
}

const lanesOf = (requests: ReadonlyArray<Sent>) => {
  const lanes = new Map<string, Array<Sent>>()
  for (const sent of requests) lanes.set(sent.lane, [...(lanes.get(sent.lane) ?? []), sent])
  return lanes
}

/**
 * A lane's requests with the re-sends a resume may make taken out: a request identical to the one before it,
 * that one the last of the lane its (killed) start sent, this one the first of the lane of a later start.
 */
const withoutResends = (lane: ReadonlyArray<Sent>, digest: (sent: Sent) => string) => {
  const kept: Array<Sent> = []
  let resends = 0
  for (const [index, sent] of lane.entries()) {
    const previous = lane[index - 1]
    const resent =
      previous !== undefined &&
      digest(previous) === digest(sent) &&
      previous.start < sent.start &&
      lane.findLastIndex((other) => other.start === previous.start) === index - 1 &&
      lane.findIndex((other) => other.start === sent.start) === index
    if (resent) resends++
    else kept.push(sent)
  }
  return { kept, resends }
}

/** How many resumes found `callId` in flight: `TurnResumed` journaled after its `ToolCalled`, before its result. */
const inFlightResumes = (entries: ReadonlyArray<JournalEntry.Entry>, callId: string) => {
  let called = false
  let resumes = 0
  for (const entry of entries) {
    if (entry._tag === "ToolCalled" && entry.callId === callId) called = true
    if (entry._tag === "ToolResulted" && entry.callId === callId) called = false
    if (entry._tag === "TurnResumed" && called) resumes++
  }
  return resumes
}

const countOf = (list: ReadonlyArray<string>) => {
  const counts = new Map<string, number>()
  for (const item of list) counts.set(item, (counts.get(item) ?? 0) + 1)
  return counts
}

/** Everything the evidence shows going wrong against `baseline`, as sentences (none when every guarantee held). */
const violations = (
  evidence: Evidence,
  baseline: Evidence,
  compare: { readonly digest: (sent: Sent) => string; readonly sameChildren: boolean }
): ReadonlyArray<string> => {
  const found: Array<string> = []
  if (evidence.answer !== baseline.answer) found.push(`answered ${JSON.stringify(evidence.answer)}`)
  const expected = lanesOf(baseline.requests)
  const lanes = lanesOf(evidence.requests)
  for (const lane of new Set([...expected.keys(), ...lanes.keys()])) {
    const { kept } = withoutResends(lanes.get(lane) ?? [], compare.digest)
    const want = (expected.get(lane) ?? []).map(compare.digest)
    const got = kept.map(compare.digest)
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      found.push(
        `the ${lane} lane sent ${got.length} requests (resends out), not the uninterrupted ${want.length}: ` +
          kept.map((sent) => `${sent.start}:${compare.digest(sent).slice(0, 8)}`).join(" ")
      )
    }
  }
  const ran = countOf(evidence.runs.map((run) => run.key))
  for (const key of new Set(baseline.runs.map((run) => run.key))) {
    const times = ran.get(key) ?? 0
    const callId = key.split(" ")[2] ?? ""
    const tasks = new Set(evidence.runs.filter((run) => run.key === key).map((run) => run.task))
    const allowed =
      1 + [...tasks].reduce((sum, task) => sum + inFlightResumes(evidence.journals.get(task) ?? [], callId), 0)
    if (times < 1 || times > allowed) found.push(`${key} ran ${times} times (allowed 1..${allowed})`)
  }
  for (const key of ran.keys()) {
    if (!baseline.runs.some((run) => run.key === key))
      found.push(`${key} ran, and the uninterrupted run has no such call`)
  }
  const children = [...evidence.journals.keys()].filter((task) => task !== parentTask).sort()
  const expectedChildren = [...baseline.journals.keys()].filter((task) => task !== parentTask).sort()
  if (
    compare.sameChildren
      ? JSON.stringify(children) !== JSON.stringify(expectedChildren)
      : children.length !== expectedChildren.length
  ) {
    found.push(`child tasks ${children.join(", ")}, not ${expectedChildren.join(", ")}`)
  }
  if (!evidence.journals.has(parentTask)) found.push("the parent has no journal")
  for (const [task, entries] of evidence.journals) {
    if (entries.at(-1)?._tag !== "TurnClosed") found.push(`${task}'s journal ends ${entries.at(-1)?._tag}`)
    if (entries.some((entry) => entry._tag === "TurnAbandoned")) found.push(`${task} abandoned a turn`)
    const calls = new Set(entries.flatMap((entry) => (entry._tag === "ToolCalled" ? [entry.callId] : [])))
    for (const callId of calls) {
      const called = entries.filter((entry) => entry._tag === "ToolCalled" && entry.callId === callId).length
      const results = entries.filter((entry) => entry._tag === "ToolResulted" && entry.callId === callId).length
      const allowed = 1 + inFlightResumes(entries, callId)
      if (called > allowed) found.push(`${task} called ${callId} ${called} times (allowed 1..${allowed})`)
      if (results !== 1) found.push(`${task}'s ${callId} has ${results} results`)
    }
  }
  return found
}

/** The tags of a journal file as a kill left it (a torn last line skipped: the next open repairs it). */
const rawTags = (file: string): ReadonlyArray<string> =>
  fs.existsSync(file)
    ? fs
        .readFileSync(file, "utf8")
        .split("\n")
        .flatMap((line) => {
          try {
            return [(JSON.parse(line) as { readonly _tag: string })._tag]
          } catch {
            return []
          }
        })
    : []

/** Where in the scenario a kill landed, read from the journals it left. */
const phaseAt = (stateDir: string) => {
  const folder = journalFolder(stateDir)
  const parent = rawTags(path.join(folder, `${parentTask}.jsonl`))
  if (!parent.includes("TurnOpened")) return "before the parent's turn"
  if (parent.includes("TurnClosed")) return "after the parent answered"
  if (!parent.includes("ToolCalled")) return "before the delegation"
  if (parent.includes("ToolResulted")) return "after the delegation"
  const children = fs
    .readdirSync(folder)
    .filter((name) => name !== `${parentTask}.jsonl` && name.endsWith(".jsonl"))
    .map((name) => rawTags(path.join(folder, name)))
  return children.length === 2 && children.every((tags) => tags.includes("TurnClosed"))
    ? "children answered, the delegation unfinished"
    : "children running"
}

const answerOf = (start: Killable.FixtureRun) => {
  const line = start.output.split("\n").find((text) => text.startsWith("done ")) ?? "done null"
  return JSON.parse(line.slice("done ".length)) as string
}

/** One trial in a fresh folder: start, kill per `plans` (at most `maxKills` times), start again until it answers. */
const trial = async (stateDir: string, wiring: Wiring, maxKills: number, plans: () => KillPlan) => {
  fs.mkdirSync(stateDir)
  const planned: Array<KillPlan> = []
  const phases: Array<string> = []
  let kills = 0
  for (let start = 0; ; start++) {
    const plan = kills < maxKills ? plans() : undefined
    if (plan !== undefined) planned.push(plan)
    const run = await runFixture(stateDir, start, wiring, plan)
    // A start that failed before the kill (a resume refused) says so on stderr.
    assert.strictEqual(run.stderr, "", `start ${start} reported a failure`)
    if (run.outcome === "done") {
      return { evidence: await evidenceOf(stateDir, answerOf(run), kills), planned, phases, starts: start + 1 }
    }
    kills++
    phases.push(phaseAt(stateDir))
  }
}

/** The uninterrupted run of `wiring`, checked for the shape the scenario promises. */
const uninterrupted = async (root: string, wiring: Wiring) => {
  const stateDir = path.join(root, `uninterrupted-${wiring}`)
  fs.mkdirSync(stateDir)
  const run = await runFixture(stateDir, 0, wiring, undefined)
  assert.strictEqual(run.outcome, "done", run.stderr)
  const evidence = await evidenceOf(stateDir, answerOf(run), 0)
  assert.strictEqual(
    evidence.answer,
    "Plan ready. scout: readings nominal; notes part 2: the north ridge is clear | critic: the plan holds (constraints met)"
  )
  // The parent delegates, then answers; the scout makes two calls and publishes, the critic makes one call.
  assert.deepStrictEqual([...lanesOf(evidence.requests)].map(([lane, sent]) => `${lane} ${sent.length}`).sort(), [
    "critic 2",
    "parent 2",
    "scout 4"
  ])
  assert.deepStrictEqual(evidence.runs.map((run) => run.key).sort(), [
    "critic check_plan c1",
    "scout fetch_notes n1",
    "scout fetch_notes n2"
  ])
  assert.strictEqual(evidence.journals.size, 3)
  // Three files: the scout's first result (large: offloaded to its own volume), its findings (published to its
  // output volume) and the parent's copy of them (in the parent's private volume).
  const offloaded = [...evidence.journals.values()].flat().filter((entry) => entry._tag === "ArtifactOffloaded")
  assert.deepStrictEqual(
    offloaded
      .map((entry) => (entry._tag === "ArtifactOffloaded" ? entry.path.split("/").slice(0, 2).join("/") : ""))
      .sort(),
    ["artifacts/delegated", "artifacts/published", "artifacts/tool-results"]
  )
  return { evidence, workMs: run.workMs }
}

describe("delegation under random kills", () => {
  it("delegation_survives_random_kills: >= 50 SIGKILLs at random points of a parent delegating to two children at once; every trial ends with the uninterrupted run's answer and requests (a lost request sent again once per kill), no tool call run again unless it was in flight at a kill, the same two child tasks, every turn closed", async () => {
    const seed = Number(process.env.TESSERA_DELEGATION_KILLS_SEED ?? Math.floor(Math.random() * 2 ** 31))
    console.info(`delegation_survives_random_kills: seed ${seed}`)
    await withRoot("tessera-delegation-kills-", async (root) => {
      const started = Date.now()
      const { evidence: baseline, workMs } = await uninterrupted(root, "sound")
      // Two lanes of trials side by side, each with its own stream of kill points, until each made 25 kills.
      const lanes = await Promise.all(
        [0, 1].map(async (lane) => {
          const random = Killable.seededRandom(seed + lane)
          const trials: Array<Awaited<ReturnType<typeof trial>> & { readonly stateDir: string }> = []
          let kills = 0
          while (kills < 25) {
            const stateDir = path.join(root, `lane-${lane}-trial-${trials.length}`)
            const done = await trial(stateDir, "sound", 3, () => planFrom(random, Math.max(workMs, 40)))
            trials.push({ ...done, stateDir })
            kills += done.evidence.kills
          }
          return trials
        })
      )
      const trials = lanes.flat()
      let resends = 0
      let reruns = 0
      for (const { evidence, planned, stateDir } of trials) {
        const where = `seed ${seed}, ${path.basename(stateDir)}, plans ${JSON.stringify(planned)}`
        assert.deepStrictEqual(
          violations(evidence, baseline, { digest: (sent) => sent.digest, sameChildren: true }),
          [],
          where
        )
        for (const lane of lanesOf(evidence.requests).values()) {
          resends += withoutResends(lane, (sent) => sent.digest).resends
        }
        reruns += evidence.runs.length - baseline.runs.length
      }
      const kills = trials.reduce((sum, one) => sum + one.evidence.kills, 0)
      assert.isAtLeast(kills, 50)
      const anchors = countOf(trials.flatMap((one) => one.planned.slice(0, one.evidence.kills).map((p) => p.anchor)))
      const phases = countOf(trials.flatMap((one) => one.phases))
      // The kills reached what the test is about: the children at work, with the parent's call in flight.
      assert.isAbove(phases.get("children running") ?? 0, 0, `seed ${seed}: no kill landed while the children ran`)
      console.info(
        `delegation_survives_random_kills: seed ${seed}, ${kills} kills (${[...anchors].map(([a, n]) => `${n} after ${a}`).join(", ")}; ` +
          `${[...phases].map(([phase, n]) => `${n} ${phase}`).join(", ")}) ` +
          `over ${trials.length} trials, ${trials.reduce((sum, one) => sum + one.starts, 0)} starts, in ` +
          `${((Date.now() - started) / 1000).toFixed(1)} s; ${resends} lost requests sent again, ` +
          `${reruns} idempotent child calls run again (in flight at a kill); uninterrupted run ${workMs} ms`
      )

      // The checker on the uninterrupted evidence, altered, sees each thing it is there for (and only it).
      const exact = { digest: (sent: Sent) => sent.digest, sameChildren: true }
      assert.deepStrictEqual(violations(baseline, baseline, exact), [])
      const extraRun = baseline.runs[0] as Evidence["runs"][number]
      assert.deepStrictEqual(violations({ ...baseline, runs: [...baseline.runs, extraRun] }, baseline, exact), [
        `${extraRun.key} ran 2 times (allowed 1..1)`
      ])
      const critic = baseline.requests.find((sent) => sent.lane === "critic") as Sent
      assert.match(
        violations({ ...baseline, requests: [...baseline.requests, critic] }, baseline, exact).join("; "),
        /^the critic lane sent 3 requests \(resends out\), not the uninterrupted 2: /
      )
      const parentEntries = baseline.journals.get(parentTask) ?? []
      const delegated = parentEntries.find((entry) => entry._tag === "ToolCalled") as JournalEntry.Entry
      const journals = (entries: ReadonlyArray<JournalEntry.Entry>) =>
        new Map([...baseline.journals, [parentTask, entries]])
      assert.deepStrictEqual(
        violations({ ...baseline, journals: journals([...parentEntries, delegated]) }, baseline, exact),
        ["plan-1's journal ends ToolCalled", "plan-1 called d1 2 times (allowed 1..1)"]
      )
      assert.deepStrictEqual(violations({ ...baseline, answer: "Plan ready." }, baseline, exact), [
        'answered "Plan ready."'
      ])
    })
  }, 180_000)

  it("delegation_survives_random_kills negative control: children named afresh on every call (a resumed call does not find its children) run a child's tool again after a kill, and the same checker finds it", async () => {
    await withRoot("tessera-delegation-kills-control-", async (root) => {
      const { evidence: baseline } = await uninterrupted(root, "renaming")
      // Each kill lands right after a child's first tool run: the parent's `delegate` is in flight.
      const { evidence } = await trial(path.join(root, "renaming"), "renaming", 2, () => ({
        anchor: "run",
        nth: 1,
        delayMs: 0
      }))
      assert.strictEqual(evidence.kills, 2)
      // Its answer is the same (the renamed children answer alike): only the kill checks can fire.
      assert.strictEqual(evidence.answer, baseline.answer)
      const found = violations(evidence, baseline, { digest: (sent) => sent.nameFree, sameChildren: false })
      console.info(`delegation_survives_random_kills negative control: ${found.join("; ")}`)
      assert.isTrue(
        found.some((problem) =>
          /^(scout fetch_notes n1|critic check_plan c1) ran [2-9] times \(allowed 1\.\.1\)$/.test(problem)
        ),
        found.join("; ")
      )
      assert.isTrue(
        found.some((problem) => problem.startsWith("child tasks ")),
        found.join("; ")
      )
    })
  }, 60_000)
})
