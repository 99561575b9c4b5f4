/**
 * The checks a turn entry runs on what it was handed, once, before anything
 * is journaled or sent.
 *
 * The types say what a configuration holds, but a JavaScript caller (or a
 * configuration read from a file) is not held to them, and the executor
 * reads the configuration at every step: a `maxSteps` left out meant no
 * limit at all, a limit of `"soon"` died at the first tool call with its
 * `ToolCalled` already journaled, a registry given as an array died with a
 * `TypeError`. Each check here names the field that is wrong in an
 * `InvalidInput` instead. They are shape checks of a few fields (and of
 * each registered tool), so an entry pays for them once, not per step.
 */
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Result from "effect/Result"
import type * as History from "../History.ts"
import * as Timeouts from "../Timeouts.ts"
import * as Tool from "../Tool.ts"

type Check = InvalidInput.InvalidInput | undefined

/**
 * The fields of a turn's configuration (`Executor.TurnConfig`) the checks
 * read. Only the two handed to their own decoders are typed; the rest are
 * read as unknown values, which is what a check is for. Stated here rather
 * than imported so that the executor, which imports these checks, is not
 * imported back.
 */
export interface TurnFields<R> {
  readonly tools: Tool.Registry<R>
  readonly timeouts?: Timeouts.CallTimeouts
}

const refuse = (entry: string, field: string, value: unknown, detail: string): InvalidInput.InvalidInput =>
  new InvalidInput.InvalidInput({ entry, field, value: InvalidInput.renderValue(value), detail })

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

const optionalFunction = (entry: string, field: string, value: unknown): Check =>
  value === undefined || typeof value === "function" ? undefined : refuse(entry, field, value, "expected a function")

/** An optional object of callbacks: absent, or an object whose `names` are functions (each required with `all`). */
const callbacks = (entry: string, field: string, value: unknown, names: ReadonlyArray<string>, all: boolean): Check => {
  if (value === undefined) return undefined
  if (!isRecord(value)) return refuse(entry, field, value, "expected an object")
  for (const name of names) {
    const member = value[name]
    const invalid =
      all && typeof member !== "function"
        ? refuse(entry, `${field}.${name}`, member, "expected a function")
        : optionalFunction(entry, `${field}.${name}`, member)
    if (invalid !== undefined) return invalid
  }
  return undefined
}

const isCount = (value: unknown, minimum: number): boolean =>
  Number.isSafeInteger(value) && (value as number) >= minimum

const hookNames = ["beforeTurn", "beforeModelStep", "afterModelStep", "onToolResult"]
const recorderNames = ["opened", "rewritten", "responded", "resulted"]

const checkConfig = <R>(entry: string, config: TurnFields<R>): Check => {
  const unchecked: unknown = config
  if (!isRecord(unchecked)) return refuse(entry, "config", unchecked, "expected an object")
  const tools = Tool.decodeRegistry(entry, "tools")(config.tools)
  if (Result.isFailure(tools)) return tools.failure
  if (!isCount(unchecked.maxSteps, 1)) {
    return refuse(entry, "maxSteps", unchecked.maxSteps, "expected an integer >= 1 (the most model steps of a turn)")
  }
  const timeouts = Timeouts.decode(entry)(config.timeouts)
  if (Result.isFailure(timeouts)) return timeouts.failure
  return (
    callbacks(entry, "hooks", unchecked.hooks, hookNames, false) ??
    optionalFunction(entry, "onEvent", unchecked.onEvent) ??
    callbacks(entry, "recorder", unchecked.recorder, recorderNames, true)
  )
}

const isPartList = (value: unknown): boolean => Array.isArray(value) && value.every(isRecord)

const checkHistory = (entry: string, field: string, history: History.History): Check => {
  const unchecked: unknown = history
  if (!isRecord(unchecked)) return refuse(entry, field, unchecked, "expected a history (History.make)")
  if (!isPartList(unchecked.task)) return refuse(entry, `${field}.task`, unchecked.task, "expected an array of parts")
  if (!isPartList(unchecked.parts))
    return refuse(entry, `${field}.parts`, unchecked.parts, "expected an array of parts")
  const summary = unchecked.summary
  if (summary === undefined) return undefined
  if (!isRecord(summary) || !isPartList(summary.parts) || typeof summary.text !== "string") {
    return refuse(entry, `${field}.summary`, summary, "expected { parts, text }")
  }
  return undefined
}

/**
 * Checks a turn's configuration and the history it starts from, for the
 * executor's entry `entry` (`Executor.runTurn`, ...).
 */
export const checkTurn = <R>(
  entry: string,
  config: TurnFields<R>,
  history: ReadonlyArray<readonly [field: string, history: History.History]>
): Result.Result<void, InvalidInput.InvalidInput> => {
  let invalid = checkConfig(entry, config)
  for (const [field, one] of history) invalid ??= checkHistory(entry, field, one)
  return invalid === undefined ? Result.void : Result.fail(invalid)
}

const checkOffload = (entry: string, offload: unknown): Check => {
  if (offload === undefined) return undefined
  if (!isRecord(offload)) return refuse(entry, "offload", offload, "expected an object")
  const { abstractBytes, destination, readTool, registerReadTool, threshold } = offload
  if (typeof threshold !== "number" || Number.isNaN(threshold) || threshold < 0) {
    return refuse(entry, "offload.threshold", threshold, "expected a number of bytes >= 0")
  }
  if (typeof readTool !== "string" || readTool.length === 0) {
    return refuse(entry, "offload.readTool", readTool, "expected a non-empty string")
  }
  if (destination !== "Private" && destination !== "Output") {
    return refuse(entry, "offload.destination", destination, 'expected "Private" or "Output"')
  }
  if (abstractBytes !== undefined && !isCount(abstractBytes, 0)) {
    return refuse(entry, "offload.abstractBytes", abstractBytes, "expected an integer >= 0")
  }
  if (registerReadTool !== undefined && typeof registerReadTool !== "boolean") {
    return refuse(entry, "offload.registerReadTool", registerReadTool, "expected a boolean")
  }
  return undefined
}

const checkHookFields = (
  entry: string,
  options: { readonly offload?: unknown; readonly inlineLimit?: unknown }
): Check =>
  checkOffload(entry, options.offload) ??
  (options.inlineLimit === undefined || isCount(options.inlineLimit, 0)
    ? undefined
    : refuse(entry, "inlineLimit", options.inlineLimit, "expected an integer number of bytes >= 0"))

/**
 * Checks what the one assembly of a task's hooks (`TaskExecution.gatedHooks`)
 * is given by a door: the offload and the inline limit.
 */
export const checkHooks = (
  entry: string,
  options: { readonly offload?: unknown; readonly inlineLimit?: unknown }
): Result.Result<void, InvalidInput.InvalidInput> => {
  const invalid = checkHookFields(entry, options)
  return invalid === undefined ? Result.void : Result.fail(invalid)
}

/**
 * Checks the configuration of a gated entry (`TaskExecution`): the turn's
 * own fields, and the offload, inline limit and durability it adds.
 */
export const checkExecution = <R>(
  entry: string,
  config: TurnFields<R> & {
    readonly offload?: unknown
    readonly inlineLimit?: unknown
    readonly durable?: unknown
  }
): Result.Result<void, InvalidInput.InvalidInput> => {
  const invalid =
    checkConfig(entry, config) ??
    checkHookFields(entry, config) ??
    (config.durable === undefined || typeof config.durable === "boolean"
      ? undefined
      : refuse(entry, "durable", config.durable, "expected a boolean"))
  return invalid === undefined ? Result.void : Result.fail(invalid)
}
