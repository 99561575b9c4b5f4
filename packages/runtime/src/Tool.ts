/**
 * Tools the model may call, and the registry the executor dispatches through.
 *
 * Running a tool never fails the turn: an unknown name, an input its Schema
 * rejects, a typed failure and a defect all become a tool-error result
 * (`isError: true`) whose text names the tool and the cause, so the model can
 * see what went wrong and react. Only interruption propagates.
 *
 * A result that is not JSON is one more defect of the tool, not something
 * to coerce: a JavaScript handler returning a `Map`, a `Date`, a cycle, a
 * `bigint`, `undefined` or `NaN` (which `JSON.stringify` would quietly turn
 * into `{}`, a date string, an exception, nothing or `null`) gets an error
 * result with failure `Defect` whose text is the {@link resultText}
 * `InvalidInput` naming the tool and the path of the offending value. The
 * turn goes on, as after any other crash of a tool: the model sees what
 * happened, and the journal records the failure.
 *
 * The constructors check what a JavaScript caller can get wrong without a
 * type checker: {@link make} and {@link registry} throw `InvalidInput` naming
 * the option or the argument, when the tool is defined rather than when it
 * is first called, and {@link decodeRegistry} lets an entry check a registry
 * it was handed.
 *
 * JSON, here and for a call's input, means what round-trips through
 * `JSON.stringify` and `JSON.parse` unchanged: `null`, booleans, finite
 * numbers, strings, arrays without holes and plain objects (prototype
 * `Object.prototype` or `null`) of those, with no cycle; the same object may
 * appear twice (that is still a tree once written out). A call's input is
 * typed `Schema.Json`, but an adapter builds it at run time from the
 * provider's answer, where the type system does not reach, so the executor
 * checks each call with {@link findNotJson} at the model boundary and refuses
 * the response instead of journaling or rendering a value that is not JSON.
 *
 * @since 0.1.0
 */
import * as InvalidInput from "@tessera/core/InvalidInput"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { canonicalJson } from "./internal/digest.ts"
import * as Json from "./internal/jsonValue.ts"
import type { ToolCallPart, ToolSpec } from "./Model.ts"

/**
 * Why a tool result is an error. The journal records it beside the result.
 *
 * - `UnknownTool`: no tool of that name is registered.
 * - `InvalidInput`: the input failed the tool's Schema; the handler did not run.
 * - `Failed`: the handler failed with a typed error.
 * - `Defect`: the handler crashed (threw or died).
 * - `TimedOut`: the call outlived its configured time limit and was
 *   interrupted (see `Timeouts`).
 * - `Rejected`: the host rejected the call it was asked to approve; the
 *   handler did not run (or, for a call in flight at a crash, did not run
 *   again).
 *
 * @since 0.1.0
 * @category models
 */
export const ToolFailure = Schema.Literals(["UnknownTool", "InvalidInput", "Failed", "Defect", "TimedOut", "Rejected"])
/**
 * @since 0.1.0
 * @category models
 */
export type ToolFailure = typeof ToolFailure.Type

/**
 * What running one call produced: the text the model will see, and, when the
 * call did not succeed, why.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolOutcome {
  readonly content: string
  readonly failure: Option.Option<ToolFailure>
}

/**
 * A registered tool. `run` decodes the input with the tool's Schema and runs
 * the handler; it fails only by interruption.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tool<out R = never> {
  readonly name: string
  readonly description: string
  readonly spec: ToolSpec
  readonly run: (input: Schema.Json) => Effect.Effect<ToolOutcome, never, R>
  /**
   * Whether a call with this input must be approved by the host before it
   * runs (absent: never). The turn journals the call as awaiting approval
   * and ends its step without running anything (see `Executor`).
   */
  readonly needsApproval?: (input: Schema.Json) => Effect.Effect<boolean, never, R>
  /**
   * Whether running a call twice is harmless. A durable resume runs a call
   * that was in flight at a crash again only for an idempotent tool; for
   * any other it asks the host (an `InFlight` approval).
   */
  readonly idempotent?: boolean
}

/**
 * What a handler may return: text, or a JSON value rendered as compact JSON.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolOutput = string | Schema.Json

const jsonValueText =
  "a tool returns a string or a JSON value (null, a boolean, a finite number, a string, or arrays and plain objects of those, without cycles)"

/**
 * The text the model receives for what the handler of tool `name`
 * returned: a string as it is, a JSON value (see {@link isJson}) as its
 * compact JSON. Anything else is refused, never coerced: `InvalidInput`
 * with entry `tool "<name>"`, field the path of the first value that is not
 * JSON (`result` itself, `result.items[3].when`, ...) and value what was
 * found there (`an instance of Date`, `undefined`, `a bigint (10n)`, a
 * cycle). {@link make} turns that refusal into the call's error result.
 *
 * @since 0.1.0
 * @category rendering
 */
export const resultText = (name: string, output: unknown): Result.Result<string, InvalidInput.InvalidInput> => {
  if (typeof output === "string") return Result.succeed(output)
  const text = Json.stringify(output, "result")
  return Result.isSuccess(text)
    ? Result.succeed(text.success)
    : Result.fail(
        new InvalidInput.InvalidInput({
          entry: `tool "${name}"`,
          field: text.failure.path,
          value: text.failure.found,
          detail: `not a JSON value; ${jsonValueText}`
        })
      )
}

/**
 * Where a value stops being JSON: a path from the root (`$`, `$.key`,
 * `$[0]`, `$["odd key"]`, or under the root name the caller chose) and what
 * was found there.
 *
 * @since 0.1.0
 * @category json
 */
export type NotJson = Json.NotJson

/**
 * The first place (depth first, in key order) where `value` is not JSON (in
 * the sense of the module comment), or `None` when all of it is. Paths start
 * at `root` (default `$`). Walks with an explicit stack, so deeply nested
 * input cannot overflow the call stack, and never calls the value's own
 * methods (`toJSON` included); a property whose getter throws is reported,
 * not rethrown.
 *
 * @since 0.1.0
 * @category json
 */
export const findNotJson: (value: unknown, root?: string) => Option.Option<NotJson> = Json.findNotJson

/**
 * Whether `value` is JSON in the sense of the module comment.
 *
 * @since 0.1.0
 * @category json
 */
export const isJson: (value: unknown) => boolean = Json.isJson

/**
 * `value` as compact JSON text (the text `JSON.stringify` gives for it),
 * or, when some of it is not JSON, the first place where it is not (as
 * {@link findNotJson} reports it, paths starting at `root`). Nothing is
 * coerced: no `toJSON` is called, nothing is dropped or replaced, and each
 * property is read once, so the text is of the very values that were
 * checked.
 *
 * @since 0.1.0
 * @category json
 */
export const stringifyJson: (value: unknown, root?: string) => Result.Result<string, NotJson> = Json.stringify

const describe = (error: unknown): string =>
  Predicate.hasProperty(error, "message") && Predicate.isString(error.message) && error.message.length > 0
    ? error.message
    : canonicalJson(error)

const failed = (failure: ToolFailure, content: string): ToolOutcome => ({ content, failure: Option.some(failure) })

const refuse = (entry: string, field: string, value: unknown, detail: string): InvalidInput.InvalidInput =>
  new InvalidInput.InvalidInput({ entry, field, value: InvalidInput.renderValue(value), detail })

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

/** The options of {@link make} a JavaScript caller can get wrong, checked once, when the tool is defined. */
const checkMakeOptions = (options: unknown): InvalidInput.InvalidInput | undefined => {
  const entry = "Tool.make"
  if (!isRecord(options)) return refuse(entry, "options", options, "expected an object")
  const { description, handler, idempotent, input, name, needsApproval } = options
  if (typeof name !== "string" || name.length === 0) return refuse(entry, "name", name, "expected a non-empty string")
  if (typeof description !== "string") return refuse(entry, "description", description, "expected a string")
  if (!Schema.isSchema(input)) return refuse(entry, "input", input, "expected a Schema")
  if (typeof handler !== "function") return refuse(entry, "handler", handler, "expected a function")
  if (needsApproval !== undefined && typeof needsApproval !== "boolean" && typeof needsApproval !== "function") {
    return refuse(entry, "needsApproval", needsApproval, "expected a boolean or a function")
  }
  if (idempotent !== undefined && typeof idempotent !== "boolean") {
    return refuse(entry, "idempotent", idempotent, "expected a boolean")
  }
  return undefined
}

/** Whether `value` has the shape of a {@link Tool} (what the dispatch reads of it), or the field that has not. */
const checkTool = (entry: string, field: string, value: unknown): InvalidInput.InvalidInput | undefined => {
  if (!isRecord(value)) return refuse(entry, field, value, "expected a tool (build one with Tool.make)")
  if (typeof value.name !== "string" || value.name.length === 0) {
    return refuse(entry, `${field}.name`, value.name, "expected a non-empty string")
  }
  if (typeof value.description !== "string") {
    return refuse(entry, `${field}.description`, value.description, "expected a string")
  }
  if (!isRecord(value.spec)) return refuse(entry, `${field}.spec`, value.spec, "expected a tool spec object")
  if (typeof value.run !== "function") return refuse(entry, `${field}.run`, value.run, "expected a function")
  if (value.needsApproval !== undefined && typeof value.needsApproval !== "function") {
    return refuse(entry, `${field}.needsApproval`, value.needsApproval, "expected a function")
  }
  if (value.idempotent !== undefined && typeof value.idempotent !== "boolean") {
    return refuse(entry, `${field}.idempotent`, value.idempotent, "expected a boolean")
  }
  return undefined
}

const inputSchemaOf = (schema: Schema.Constraint): Record<string, unknown> => {
  const document = Schema.toJsonSchemaDocument(schema)
  return Object.keys(document.definitions).length === 0
    ? { ...document.schema }
    : { ...document.schema, $defs: document.definitions }
}

/**
 * Defines a tool from a name, a description, an input Schema and a handler.
 * The tool's JSON Schema (sent to the model in every request) is derived from
 * the input Schema. What the handler returns becomes the call's result
 * through {@link resultText}.
 *
 * @throws InvalidInput (entry `Tool.make`) naming the option when the
 * options are not an object, `name` is not a non-empty string,
 * `description` not a string, `input` not a Schema, `handler` not a
 * function, `needsApproval` neither a boolean nor a function or
 * `idempotent` not a boolean: a programming error, refused where the tool
 * is defined, like a duplicate name in {@link registry}.
 * @example
 * ```ts
 * import { Tool } from "@tessera/runtime"
 * import { Effect, Schema } from "effect"
 *
 * // The input schema is sent to the model and decodes its calls: the handler gets a checked value.
 * export const fetchReport = Tool.make({
 *   name: "fetch_report",
 *   description: "Fetches a report by name",
 *   input: Schema.Struct({ name: Schema.String, lines: Schema.optionalKey(Schema.Int) }),
 *   handler: ({ name, lines = 10 }) =>
 *     Effect.succeed(Array.from({ length: lines }, (_, i) => `${name} line ${i + 1}: ok`).join("\n")),
 *   // Fetching twice is harmless: a call cut short by a crash runs again on resume.
 *   idempotent: true
 * })
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <S extends Schema.Constraint, E, R>(options: {
  readonly name: string
  readonly description: string
  readonly input: S
  readonly handler: (input: S["Type"]) => Effect.Effect<ToolOutput, E, R>
  /**
   * `true`: every call needs the host's approval; a predicate: the calls
   * whose decoded input it holds for. An input the Schema rejects needs no
   * approval (the handler never runs: the call becomes an `InvalidInput`
   * result).
   */
  readonly needsApproval?: boolean | ((input: S["Type"]) => boolean)
  /** Running a call twice is harmless (see {@link Tool.idempotent}); default `false`. */
  readonly idempotent?: boolean
}): Tool<R | S["DecodingServices"]> => {
  const invalid = checkMakeOptions(options)
  if (invalid !== undefined) throw invalid
  const decode = Schema.decodeUnknownEffect(options.input)
  const name = options.name
  const approval = options.needsApproval
  return {
    name,
    description: options.description,
    spec: { name, description: options.description, inputSchema: inputSchemaOf(options.input) },
    ...(options.idempotent === true ? { idempotent: true } : {}),
    ...(approval === undefined || approval === false
      ? {}
      : {
          needsApproval: (input: Schema.Json) =>
            approval === true
              ? Effect.succeed(true)
              : decode(input).pipe(
                  Effect.map((decoded) => approval(decoded)),
                  Effect.orElseSucceed(() => false)
                )
        }),
    run: (input) =>
      decode(input).pipe(
        Effect.matchEffect({
          onFailure: (issue) =>
            Effect.succeed(failed("InvalidInput", `invalid input for tool "${name}": ${issue.message}`)),
          onSuccess: (decoded) =>
            Effect.exit(Effect.suspend(() => options.handler(decoded))).pipe(
              Effect.flatMap((exit) => {
                if (Exit.isSuccess(exit)) {
                  const text = resultText(name, exit.value)
                  // A result that is not JSON is the handler breaking its contract: a defect of the tool.
                  return Effect.succeed<ToolOutcome>(
                    Result.isSuccess(text)
                      ? { content: text.success, failure: Option.none() }
                      : failed("Defect", text.failure.message)
                  )
                }
                const cause = exit.cause
                // Interruption is the caller stopping the turn, not the tool failing: let it through.
                if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
                const error = Cause.findError(cause)
                return Effect.succeed(
                  error._tag === "Success"
                    ? failed("Failed", `tool "${name}" failed: ${describe(error.success)}`)
                    : failed("Defect", `tool "${name}" crashed: ${describe(Cause.squash(cause))}`)
                )
              })
            )
        })
      )
  }
}

/**
 * Two registered tools share a name.
 *
 * @since 0.1.0
 * @category errors
 */
export class DuplicateToolName extends Schema.TaggedError<DuplicateToolName>()("DuplicateToolName", {
  name: Schema.String
}) {
  override get message(): string {
    return `two tools are registered as "${this.name}"`
  }
}

/**
 * The tools one executor offers, by name.
 *
 * @since 0.1.0
 * @category models
 */
export interface Registry<out R = never> {
  readonly tools: ReadonlyMap<string, Tool<R>>
  /** The specs sent with every request, in registration order. */
  readonly specs: ReadonlyArray<ToolSpec>
}

/**
 * The services a registry of `Tools` needs: the union of its tools'. No
 * tools need none (`never`), so a turn without tools requires nothing of
 * them.
 *
 * @since 0.1.0
 * @category models
 */
export type RegistryServices<Tools extends ReadonlyArray<Tool<unknown>>> = [Tools[number]] extends [never]
  ? never
  : [Tools[number]] extends [Tool<infer R>]
    ? R
    : never

/**
 * Builds a registry. Names must be unique: a duplicate is a programming
 * error and throws {@link DuplicateToolName} rather than letting one tool
 * silently shadow another. An argument that is not a tool (a JavaScript
 * caller's `undefined`, an options object instead of `Tool.make` of it)
 * throws `InvalidInput` (entry `Tool.registry`, field `tools[<index>]` or
 * the tool's field that is wrong). Its requirement is the union of the
 * tools' ({@link RegistryServices}): `never` for no tools.
 *
 * @example
 * ```ts
 * import { Tool } from "@tessera/runtime"
 * import { Effect, Schema } from "effect"
 *
 * const listFiles = Tool.make({
 *   name: "list_files",
 *   description: "Lists the files of a folder",
 *   input: Schema.Struct({ folder: Schema.String }),
 *   handler: ({ folder }) => Effect.succeed(`${folder}/README.md`)
 * })
 * const readFile = Tool.make({
 *   name: "read_file",
 *   description: "Reads a file",
 *   input: Schema.Struct({ path: Schema.String }),
 *   handler: ({ path }) => Effect.succeed(`// ${path}`)
 * })
 *
 * export const tools = Tool.registry(listFiles, readFile)
 *
 * console.log(tools.specs.map((spec) => spec.name)) // ["list_files", "read_file"]: sent with every request, in this order
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const registry = <const Tools extends ReadonlyArray<Tool<unknown>>>(
  ...tools: Tools
): Registry<RegistryServices<Tools>> => {
  for (let index = 0; index < tools.length; index++) {
    const invalid = checkTool("Tool.registry", `tools[${index}]`, tools[index])
    if (invalid !== undefined) throw invalid
  }
  const byName = new Map<string, Tool<unknown>>()
  for (const tool of tools) {
    if (byName.has(tool.name)) throw new DuplicateToolName({ name: tool.name })
    byName.set(tool.name, tool)
  }
  // The map holds exactly the given tools, so its requirement is the union of theirs.
  return { tools: byName, specs: tools.map((tool) => tool.spec) } as Registry<RegistryServices<Tools>>
}

/**
 * Checks a registry handed to a public `entry` (`field` names it there):
 * a `Map` of tools by name, each with the shape the dispatch reads (see
 * {@link Tool}), and an array of specs. Returns the registry itself; an
 * entry runs it once, before anything is journaled or sent, so a wrong
 * shape is an `InvalidInput` naming the field rather than a `TypeError`
 * at the first tool call.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeRegistry =
  (entry: string, field: string) =>
  <R>(value: Registry<R>): Result.Result<Registry<R>, InvalidInput.InvalidInput> => {
    const unchecked: unknown = value
    if (!isRecord(unchecked)) return Result.fail(refuse(entry, field, unchecked, "expected a registry (Tool.registry)"))
    if (!(unchecked.tools instanceof Map)) {
      return Result.fail(refuse(entry, `${field}.tools`, unchecked.tools, "expected a Map of tools by name"))
    }
    if (!Array.isArray(unchecked.specs)) {
      return Result.fail(refuse(entry, `${field}.specs`, unchecked.specs, "expected an array of tool specs"))
    }
    for (const [name, tool] of unchecked.tools as Map<unknown, unknown>) {
      const invalid = checkTool(entry, `${field}.tools[${JSON.stringify(String(name))}]`, tool)
      if (invalid !== undefined) return Result.fail(invalid)
    }
    return Result.succeed(value)
  }

/**
 * The empty registry: a model that calls a tool gets an `UnknownTool` result.
 *
 * @since 0.1.0
 * @category constructors
 */
export const empty: Registry = { tools: new Map(), specs: [] }

/** What a hand-built tool's `run` gave back, when it is not an outcome: the text of its error result. */
const checkOutcome = (name: string, outcome: unknown): ToolOutcome => {
  if (!isRecord(outcome)) {
    return failed("Defect", refuse(`tool "${name}"`, "outcome", outcome, "expected { content, failure }").message)
  }
  if (typeof outcome.content !== "string") {
    return failed("Defect", refuse(`tool "${name}"`, "outcome.content", outcome.content, "expected a string").message)
  }
  if (!Option.isOption(outcome.failure) || (Option.isSome(outcome.failure) && !isFailure(outcome.failure.value))) {
    return failed(
      "Defect",
      refuse(`tool "${name}"`, "outcome.failure", outcome.failure, "expected an Option of a ToolFailure").message
    )
  }
  return outcome as unknown as ToolOutcome
}

const isFailure = Schema.is(ToolFailure)

/**
 * Runs one call through a registry. Never fails except by interruption; see
 * the module comment for how each kind of failure is reported. A tool not
 * made by {@link make} (a hand-built one) is held to the same: a `run` that
 * throws, dies or returns something other than an effect of a
 * {@link ToolOutcome} gives a `Defect` result naming the tool.
 *
 * @since 0.1.0
 * @category running
 */
export const run = <R>(tools: Registry<R>, call: ToolCallPart): Effect.Effect<ToolOutcome, never, R> => {
  const tool = tools.tools.get(call.name)
  if (tool === undefined) {
    const known = [...tools.tools.keys()]
    return Effect.succeed(
      failed(
        "UnknownTool",
        `unknown tool "${call.name}": ${known.length === 0 ? "no tools are available" : `available tools are ${known.map((name) => `"${name}"`).join(", ")}`}`
      )
    )
  }
  const name = call.name
  return Effect.exit(
    Effect.suspend(() => {
      const running: unknown = tool.run(call.input)
      return Effect.isEffect(running)
        ? (running as Effect.Effect<unknown, unknown, R>)
        : Effect.succeed(
            failed("Defect", refuse(`tool "${name}"`, "run", running, "expected run to return an effect").message)
          )
    })
  ).pipe(
    Effect.flatMap((exit): Effect.Effect<ToolOutcome> => {
      if (Exit.isSuccess(exit)) return Effect.succeed(checkOutcome(name, exit.value))
      if (Cause.hasInterruptsOnly(exit.cause)) return Effect.failCause(exit.cause as Cause.Cause<never>)
      return Effect.succeed(failed("Defect", `tool "${name}" crashed: ${describe(Cause.squash(exit.cause))}`))
    })
  )
}

/**
 * Whether `call` must be approved before it runs: its tool declares
 * approval ({@link Tool.needsApproval}) and holds for this input. An unknown
 * tool needs none (the call becomes an `UnknownTool` result).
 *
 * @since 0.1.0
 * @category approvals
 */
export const needsApproval = <R>(tools: Registry<R>, call: ToolCallPart): Effect.Effect<boolean, never, R> => {
  const check = tools.tools.get(call.name)?.needsApproval
  return check === undefined ? Effect.succeed(false) : check(call.input)
}

/**
 * Whether the tool named `name` is declared idempotent.
 *
 * @since 0.1.0
 * @category approvals
 */
export const isIdempotent = <R>(tools: Registry<R>, name: string): boolean => tools.tools.get(name)?.idempotent === true

const declaresApproval = new WeakMap<object, boolean>()

/**
 * Whether any tool of the registry declares approval (computed once per
 * registry). A turn whose tools declare none dispatches a fresh step's
 * calls without looking for approvals.
 *
 * @since 0.1.0
 * @category approvals
 */
export const anyNeedsApproval = <R>(tools: Registry<R>): boolean => {
  const known = declaresApproval.get(tools)
  if (known !== undefined) return known
  let any = false
  for (const tool of tools.tools.values()) if (tool.needsApproval !== undefined) any = true
  declaresApproval.set(tools, any)
  return any
}

/**
 * The call a handler is running for (`CallPosition`: task, turn, step and
 * the model's call id), set by the executor around every call it
 * dispatches and `None` outside one. A tool that names what it creates
 * after its call (as `Delegation`'s child tasks are) reads it, so a call
 * run again on resume names the same things.
 *
 * @since 0.1.0
 * @category context
 */
export { type CallPosition, CurrentCall } from "./internal/currentCall.ts"
