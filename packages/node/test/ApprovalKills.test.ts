/**
 * Exactly once under random kills, with approvals: real child processes
 * (fixtures/approvalTurns.ts) run durable turns whose calls wait for the
 * host's approval, act as the host on every start (decide, then resume from
 * disk alone), and are killed with SIGKILL at random points: some a random
 * time after the harness is ready, some a few milliseconds after a deploy
 * starts or takes effect, so kills land inside approved calls too.
 *
 * What must hold at the end: every start resumed (a failed resume fails
 * the child, and the test), a non-idempotent call took effect exactly once
 * (an approved one in flight at a kill was asked again, `InFlight`, and the
 * host, who can see whether the effect happened, rejected a second run or
 * approved the first), an idempotent
 * call ran again only when a resume reported it in flight, no call ran
 * again without an `InFlight` question in the journal, no transcript record
 * under a final name is torn, no temporary name is left, the journal reads
 * back and every turn closed.
 *
 * The kill points come from a seeded PRNG; the seed is printed (set
 * `TESSERA_APPROVAL_KILLS_SEED` to replay the same plan: where a kill lands
 * still depends on timing, so a replay aims at the same points, not the same
 * instructions).
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { DurableFiles } from "@tessera/core"
import { Journal, type JournalEntry } from "@tessera/runtime"
import { Effect } from "effect"
import * as Killable from "./support/killableFixture.ts"
import { taskId, withRoot } from "./support/temp.ts"

const child = path.join(import.meta.dirname, "fixtures", "approvalTurns.ts")
// Where the child keeps the task (see the fixture).
const namespace = "approval-kills"
const task = taskId("approval-task")
const volumes = (stateDir: string) => path.join(stateDir, namespace, "volumes")
const transcripts = (stateDir: string) => path.join(volumes(stateDir), "approver-scratch", "transcripts", task)

/** The fixture's tools, by whether running a call twice is harmless. */
const idempotent: ReadonlyMap<string, boolean> = new Map([
  ["deploy", false],
  ["notify", false],
  ["restart", true],
  ["fetch", true]
])

type Host = "careful" | "careless"

type KillPlan = Killable.KillPlan<"ready" | "deploy-start" | "deploy-effect">

const runChild = (stateDir: string, turns: number, host: Host, plan: KillPlan | undefined) =>
  Killable.runFixture({
    fixture: child,
    args: [stateDir, String(turns), host],
    env: { NODE_COMPILE_CACHE: path.join(stateDir, "..", "compile-cache") },
    kill: plan
  })

const planFrom = (random: () => number): KillPlan => {
  const pick = random()
  const nth = 1 + Math.floor(random() * 3)
  // Inside a deploy: it waits 6 ms before its effect and 20 ms after it, so these land before, at or after the effect.
  if (pick < 0.3) return { anchor: "deploy-start", nth, delayMs: Math.floor(random() * 12) }
  if (pick < 0.6) return { anchor: "deploy-effect", nth, delayMs: Math.floor(random() * 25) }
  return { anchor: "ready", nth: 1, delayMs: Math.floor(random() * 400) }
}

const lines = (file: string): ReadonlyArray<string> =>
  fs.existsSync(file)
    ? fs
        .readFileSync(file, "utf8")
        .split("\n")
        .filter((line) => line.length > 0)
    : []

const readJournal = (stateDir: string) =>
  Effect.runPromise(
    Journal.readEntries({ folder: path.join(volumes(stateDir), "journal"), task }).pipe(
      Effect.provide(NodeServices.layer)
    )
  )

/** What a run left for the checker: the journal, and the logs the child kept. */
interface Evidence {
  readonly turns: number
  readonly entries: ReadonlyArray<JournalEntry.Entry>
  /** `<tool> <call id>`, one line per time a call took effect. */
  readonly effects: ReadonlyArray<string>
  /** `<tool> <call id>`, one line per time a resume started with the call in flight. */
  readonly inFlight: ReadonlyArray<string>
  /** Ids of approved, non-idempotent calls found in flight when a resume started. */
  readonly approvedInFlight: ReadonlyArray<string>
}

const evidenceOf = async (stateDir: string, turns: number): Promise<Evidence> => ({
  turns,
  entries: await readJournal(stateDir),
  effects: lines(path.join(stateDir, "effects.log")),
  inFlight: lines(path.join(stateDir, "in-flight.log")),
  approvedInFlight: lines(path.join(stateDir, "approved-in-flight.log"))
})

const countOf = (list: ReadonlyArray<string>) => {
  const counts = new Map<string, number>()
  for (const item of list) counts.set(item, (counts.get(item) ?? 0) + 1)
  return counts
}

/** Everything the evidence shows going wrong, as sentences (none when exactly-once held). */
const violations = (evidence: Evidence): ReadonlyArray<string> => {
  const found: Array<string> = []
  const { entries } = evidence
  const tags = entries.map((entry) => entry._tag)
  const closed = tags.filter((tag) => tag === "TurnClosed").length
  if (closed !== evidence.turns) found.push(`${closed} turns closed, not ${evidence.turns}`)
  if (tags.includes("TurnAbandoned")) found.push("a turn was abandoned")
  for (const line of evidence.effects) {
    if (!/^(deploy|notify|restart|fetch) t\d+\.s\d\.(deploy|notify|restart|fetch)$/.test(line)) {
      found.push(`a torn effect line: ${JSON.stringify(line)}`)
    }
  }
  const asked = new Map<string, string>()
  for (const entry of entries) {
    if (entry._tag === "ResponseReceived") for (const call of entry.toolCalls) asked.set(call.callId, call.name)
  }
  if (asked.size === 0) found.push("the model asked for no call")
  const effects = countOf(evidence.effects)
  const reported = countOf(evidence.inFlight)
  for (const [id, name] of asked) {
    const key = `${name} ${id}`
    const times = effects.get(key) ?? 0
    // A non-idempotent call takes effect exactly once; an idempotent one once, plus once per resume that found it in flight.
    const allowed = idempotent.get(name) === true ? 1 + (reported.get(key) ?? 0) : 1
    if (times < 1 || times > allowed) found.push(`${key} took effect ${times} times (allowed 1..${allowed})`)
    const results = entries.filter((entry) => entry._tag === "ToolResulted" && entry.callId === id).length
    if (results !== 1) found.push(`${key} has ${results} results`)
  }
  for (const key of effects.keys()) {
    if (!asked.has(key.split(" ")[1] ?? "")) found.push(`${key} took effect but was never asked for`)
  }
  // From the journal alone: a non-idempotent call called again had an InFlight question, approved, in between.
  for (const [id, name] of asked) {
    if (idempotent.get(name) === true) continue
    let calls = 0
    let askedAgain = false
    let approvedAgain = false
    for (const entry of entries) {
      if (!("callId" in entry) || entry.callId !== id) continue
      if (entry._tag === "ApprovalRequested" && entry.reason === "InFlight") askedAgain = true
      if (entry._tag === "ApprovalDecided" && askedAgain && entry.approved) approvedAgain = true
      if (entry._tag !== "ToolCalled") continue
      if (calls > 0 && !(askedAgain && approvedAgain)) found.push(`${name} ${id} was called again without asking`)
      calls++
      askedAgain = false
      approvedAgain = false
    }
  }
  for (const id of new Set(evidence.approvedInFlight)) {
    const askedInFlight = entries.some(
      (entry) => entry._tag === "ApprovalRequested" && entry.callId === id && entry.reason === "InFlight"
    )
    if (!askedInFlight) found.push(`approved ${id} was in flight and not asked again`)
  }
  return found
}

/** Transcript records under a final name whose bytes do not have the digest they are named by (torn or changed). */
const tornRecords = (stateDir: string): ReadonlyArray<string> => {
  const folder = transcripts(stateDir)
  if (!fs.existsSync(folder)) return []
  return fs
    .readdirSync(folder)
    .filter((name) => !DurableFiles.isTemporaryName(name))
    .filter(
      (name) =>
        `${createHash("sha256")
          .update(fs.readFileSync(path.join(folder, name)))
          .digest("hex")}.json` !== name
    )
}

const temporaryNames = (stateDir: string): ReadonlyArray<string> =>
  fs
    .readdirSync(volumes(stateDir), { recursive: true, encoding: "utf8" })
    .filter((name) => DurableFiles.isTemporaryName(path.basename(name)))

/**
 * Runs, killing per `plans`, until `kills` kills were made (with no end in
 * sight, so every run ends in a kill); then runs to the end of the turn
 * after the last one opened.
 */
const killAndResume = async (stateDir: string, host: Host, kills: number, plans: () => KillPlan) => {
  fs.mkdirSync(stateDir)
  let resumes = 0
  let lastTurn = 0
  const anchors = new Map<string, number>()
  const note = (run: Killable.FixtureRun) => {
    for (const line of run.output.split("\n")) {
      if (line.startsWith("resumed")) resumes++
      const opened = /^turn (\d+)$/.exec(line)
      if (opened !== null) lastTurn = Math.max(lastTurn, Number(opened[1]))
    }
  }
  for (let killed = 0; killed < kills; killed++) {
    const plan = plans()
    const run = await runChild(stateDir, 1_000_000, host, plan)
    note(run)
    assert.strictEqual(run.outcome, "killed")
    // A child that failed (a resume refused, a check of its own) says so on stderr, even if the kill came first.
    assert.strictEqual(run.stderr, "", "the child reported a failure before the kill")
    anchors.set(plan.anchor, (anchors.get(plan.anchor) ?? 0) + 1)
    // What anyone listing the folder sees right after the kill.
    assert.deepStrictEqual(tornRecords(stateDir), [], "a torn transcript record under a final name after a kill")
  }
  const turns = lastTurn + 1
  const final = await runChild(stateDir, turns, host, undefined)
  note(final)
  assert.strictEqual(final.outcome, "done")
  assert.strictEqual(final.stderr, "")
  return { killed: kills, turns, resumes, anchors }
}

describe("approved calls under random kills", () => {
  it("approved_calls_survive_random_kills: >= 30 SIGKILLs at random points of durable turns with approvals; every start resumes; a non-idempotent call takes effect exactly once (an approved one in flight is asked again, InFlight); no torn record or temporary name; the journal reads back and the task finishes", async () => {
    const seed = Number(process.env.TESSERA_APPROVAL_KILLS_SEED ?? Math.floor(Math.random() * 2 ** 31))
    console.info(`approved_calls_survive_random_kills: seed ${seed}`)
    await withRoot("tessera-approval-kills-", async (root) => {
      const started = Date.now()
      // Two lanes (two stores) side by side, each with its own stream of kill points, 16 kills each.
      const lanes = await Promise.all(
        [0, 1].map(async (index) => {
          const stateDir = path.join(root, `lane-${index}`)
          const random = Killable.seededRandom(seed + index)
          const result = await killAndResume(stateDir, "careful", 16, () => planFrom(random))
          return { stateDir, result, evidence: await evidenceOf(stateDir, result.turns) }
        })
      )
      for (const { stateDir, evidence } of lanes) {
        const where = `seed ${seed}, ${path.basename(stateDir)}`
        assert.deepStrictEqual(violations(evidence), [], where)
        assert.deepStrictEqual(tornRecords(stateDir), [], where)
        // Reopening removed every temporary name a kill left.
        assert.deepStrictEqual(temporaryNames(stateDir), [], where)
      }
      const sum = (of: (lane: (typeof lanes)[number]) => number) => lanes.reduce((total, lane) => total + of(lane), 0)
      const kills = sum((lane) => lane.result.killed)
      assert.isAtLeast(kills, 30)
      // Distinct calls: a kill before the resume asked again leaves the same call in flight for the next start.
      const approvedInFlight = sum((lane) => new Set(lane.evidence.approvedInFlight).size)
      const inFlightAsked = sum(
        (lane) =>
          lane.evidence.entries.filter((entry) => entry._tag === "ApprovalRequested" && entry.reason === "InFlight")
            .length
      )
      const rejected = sum(
        (lane) =>
          lines(path.join(lane.stateDir, "decisions.log")).filter(
            (line) => line.startsWith("InFlight ") && line.endsWith(" rejected")
          ).length
      )
      // The kills reached what the test is about: approved calls in flight, asked again.
      assert.isAbove(approvedInFlight, 0, `seed ${seed}: no approved call was in flight at a kill`)
      assert.isAtLeast(inFlightAsked, approvedInFlight, `seed ${seed}`)
      const anchors = new Map<string, number>()
      for (const lane of lanes) {
        for (const [anchor, n] of lane.result.anchors) anchors.set(anchor, (anchors.get(anchor) ?? 0) + n)
      }
      console.info(
        `approved_calls_survive_random_kills: seed ${seed}, ${kills} kills ` +
          `(${[...anchors].map(([anchor, n]) => `${n} at ${anchor}`).join(", ")}) over ` +
          `${lanes.map((lane) => lane.result.turns).join(" + ")} turns in ${((Date.now() - started) / 1000).toFixed(1)} s; ` +
          `${sum((lane) => lane.result.resumes)} resumes, ${sum((lane) => lane.evidence.inFlight.length)} calls in flight ` +
          `at a resume, ${approvedInFlight} of them approved and not idempotent, ${inFlightAsked} InFlight questions ` +
          `(${rejected} rejected: the effect had happened)`
      )

      const { evidence } = lanes[0] as (typeof lanes)[number]
      // Negative control on the same evidence: a deploy run twice, and a call run again without asking, are seen.
      const deployed = evidence.effects.find((line) => line.startsWith("deploy ")) as string
      const doubled = violations({ ...evidence, effects: [...evidence.effects, deployed] })
      assert.deepStrictEqual(doubled, [`${deployed} took effect 2 times (allowed 1..1)`])
      const calledAt = evidence.entries.findIndex((entry) => entry._tag === "ToolCalled" && entry.name === "deploy")
      const called = evidence.entries[calledAt] as JournalEntry.Entry
      const silently = violations({
        ...evidence,
        entries: [...evidence.entries.slice(0, calledAt + 1), called, ...evidence.entries.slice(calledAt + 1)]
      })
      assert.include(
        silently,
        `deploy ${called._tag === "ToolCalled" ? called.callId : ""} was called again without asking`
      )
      // A deploy the journal never asked about again, claimed to have been found approved and in flight.
      const neverAskedAgain = evidence.entries.find(
        (entry) =>
          entry._tag === "ToolCalled" &&
          entry.name === "deploy" &&
          !evidence.entries.some(
            (other) =>
              other._tag === "ApprovalRequested" && other.callId === entry.callId && other.reason === "InFlight"
          )
      )
      const claimed = neverAskedAgain?._tag === "ToolCalled" ? neverAskedAgain.callId : "no such deploy"
      const unasked = violations({ ...evidence, approvedInFlight: [...evidence.approvedInFlight, claimed] })
      assert.deepStrictEqual(unasked, [`approved ${claimed} was in flight and not asked again`])
    })
  }, 180_000)

  it("negative control: a host that approves every InFlight question runs an approved deploy whose effect happened again, and the same checker finds it", async () => {
    await withRoot("tessera-approval-kills-control-", async (root) => {
      const stateDir = path.join(root, "lane")
      // Each kill lands right after a deploy took effect, before its result is journaled (it waits 20 ms).
      const result = await killAndResume(stateDir, "careless", 3, () => ({
        anchor: "deploy-effect",
        nth: 1,
        delayMs: 0
      }))
      const found = violations(await evidenceOf(stateDir, result.turns))
      assert.isAbove(found.length, 0)
      // Only the duplicate check fires: the runtime did ask again (InFlight); the host said yes. (A kill that came
      // late may have caught a notify instead, which the careless host runs twice too.)
      assert.isTrue(
        found.some((problem) => /^deploy \S+ took effect [2-9] times/.test(problem)),
        found.join("; ")
      )
      for (const problem of found) assert.match(problem, /^(deploy|notify) \S+ took effect [2-9] times/)
    })
  }, 120_000)
})
