/**
 * The runner of the kill tests: starts a fixture in a real Node process,
 * collects what it prints, kills it with SIGKILL where a plan says, and
 * reports how the process ended. The fixtures it runs print `ready` once
 * their work begins and a done line once it finished; a kill plan anchors on
 * the lines they print.
 */
import { spawn } from "node:child_process"
import * as path from "node:path"

/**
 * Where to kill: `delayMs` after stdout holds `nth` lines starting with
 * `anchor` (a delay after the fixture is ready: {@link afterReady}). A
 * `delayMs` of 0 kills in the same tick the anchor arrives, so the kill lands
 * as close to the anchored step as the pipe allows.
 */
export interface KillPlan<Anchor extends string = string> {
  readonly anchor: Anchor
  readonly nth: number
  readonly delayMs: number
}

/**
 * A seeded PRNG (mulberry32) for drawing kill plans: the same seed yields the
 * same numbers in [0, 1), so a printed seed replays the same plans (where a
 * kill lands still depends on timing).
 */
export const seededRandom = (seed: number): (() => number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** The plan that kills `delayMs` after the fixture's first `ready` line. */
export const afterReady = (delayMs: number): KillPlan<"ready"> => ({ anchor: "ready", nth: 1, delayMs })

/** How one start of a fixture ended. */
export interface FixtureRun {
  /** `done`: exited 0 having printed the done marker; `killed`: ended by SIGKILL (the plan's, or anyone's). */
  readonly outcome: "killed" | "done"
  /** Everything the fixture wrote to stdout. */
  readonly output: string
  /** Everything the fixture wrote to stderr (the fixtures report failures there). */
  readonly stderr: string
  /** Milliseconds from the first `ready` line on stdout to the exit; 0 when the fixture never printed it. */
  readonly workMs: number
}

/** What {@link runFixture} starts, and where it kills. */
export interface FixtureOptions {
  /** The fixture's file, run with this test's own Node (`process.execPath`). */
  readonly fixture: string
  readonly args: ReadonlyArray<string>
  /** Variables set over this process's environment (which the fixture inherits either way). */
  readonly env?: Readonly<Record<string, string>> | undefined
  /** Where to kill; never when `undefined`. */
  readonly kill?: KillPlan | undefined
  /** What stdout must contain for an exit 0 to count as done (default `done`). */
  readonly doneMarker?: string | undefined
}

/**
 * Starts `fixture` once and resolves with how it ended. Rejects when it
 * ended otherwise: a non-zero exit, an exit 0 without the done marker, or a
 * signal other than SIGKILL (the message carries its stdout and stderr).
 * A plan is armed once: the kill fires at most one time per start.
 */
export const runFixture = (options: FixtureOptions): Promise<FixtureRun> =>
  new Promise((resolve, reject) => {
    const { fixture, args, env, kill: plan, doneMarker = "done" } = options
    const process_ = spawn(process.execPath, [fixture, ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: env === undefined ? process.env : { ...process.env, ...env }
    })
    let output = ""
    let stderr = ""
    let armed = false
    let readyAt: number | undefined
    let timer: NodeJS.Timeout | undefined
    const kill = () => process_.kill("SIGKILL")
    process_.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString()
      if (readyAt === undefined && output.includes("ready\n")) readyAt = Date.now()
      if (plan === undefined || armed) return
      const seen = output.split("\n").filter((line) => line.startsWith(plan.anchor)).length
      if (seen < plan.nth) return
      armed = true
      if (plan.delayMs === 0) kill()
      else timer = setTimeout(kill, plan.delayMs)
    })
    process_.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    process_.once("exit", (code, signal) => {
      if (timer !== undefined) clearTimeout(timer)
      const workMs = readyAt === undefined ? 0 : Date.now() - readyAt
      if (code === 0 && output.includes(doneMarker)) resolve({ outcome: "done", output, stderr, workMs })
      else if (signal === "SIGKILL") resolve({ outcome: "killed", output, stderr, workMs })
      else {
        reject(new Error(`${path.basename(fixture)} failed (code ${code}, signal ${signal}): ${output}${stderr}`))
      }
    })
  })
