/**
 * Tools the model may call, and the registry the executor dispatches through.
 *
 * Running a tool never fails the turn: an unknown name, an input its Schema
 * rejects, a typed failure and a defect all become a tool-error result
 * (`isError: true`) whose text names the tool and the cause, so the model can
 * see what went wrong and react. Only interruption propagates.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import { canonicalJson } from "./internal/digest.ts"
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

const render = (output: ToolOutput): string => (typeof output === "string" ? output : canonicalJson(output))

const describe = (error: unknown): string =>
  Predicate.hasProperty(error, "message") && Predicate.isString(error.message) && error.message.length > 0
    ? error.message
    : canonicalJson(error)

const failed = (failure: ToolFailure, content: string): ToolOutcome => ({ content, failure: Option.some(failure) })

const inputSchemaOf = (schema: Schema.Constraint): Record<string, unknown> => {
  const document = Schema.toJsonSchemaDocument(schema)
  return Object.keys(document.definitions).length === 0
    ? { ...document.schema }
    : { ...document.schema, $defs: document.definitions }
}

/**
 * Defines a tool from a name, a description, an input Schema and a handler.
 * The tool's JSON Schema (sent to the model in every request) is derived from
 * the input Schema.
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
                  return Effect.succeed<ToolOutcome>({ content: render(exit.value), failure: Option.none() })
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
 * Builds a registry. Names must be unique: a duplicate is a programming
 * error and throws {@link DuplicateToolName} rather than letting one tool
 * silently shadow another.
 *
 * @since 0.1.0
 * @category constructors
 */
export const registry = <const Tools extends ReadonlyArray<Tool<unknown>>>(
  ...tools: Tools
): Registry<[Tools[number]] extends [Tool<infer R>] ? R : never> => {
  const byName = new Map<string, Tool<unknown>>()
  for (const tool of tools) {
    if (byName.has(tool.name)) throw new DuplicateToolName({ name: tool.name })
    byName.set(tool.name, tool)
  }
  // The map holds exactly the given tools, so its requirement is the union of theirs.
  return { tools: byName, specs: tools.map((tool) => tool.spec) } as Registry<
    [Tools[number]] extends [Tool<infer R>] ? R : never
  >
}

/**
 * The empty registry: a model that calls a tool gets an `UnknownTool` result.
 *
 * @since 0.1.0
 * @category constructors
 */
export const empty: Registry = { tools: new Map(), specs: [] }

/**
 * Runs one call through a registry. Never fails except by interruption; see
 * the module comment for how each kind of failure is reported.
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
  return tool.run(call.input)
}

/**
 * Whether `call` must be approved before it runs: its tool declares
 * approval ({@link Tool.needsApproval}) and holds for this input. An unknown
 * tool needs none (the call becomes an `UnknownTool` result).
 *
 * @since 0.3.0
 * @category approvals
 */
export const needsApproval = <R>(tools: Registry<R>, call: ToolCallPart): Effect.Effect<boolean, never, R> => {
  const check = tools.tools.get(call.name)?.needsApproval
  return check === undefined ? Effect.succeed(false) : check(call.input)
}

/**
 * Whether the tool named `name` is declared idempotent.
 *
 * @since 0.3.0
 * @category approvals
 */
export const isIdempotent = <R>(tools: Registry<R>, name: string): boolean => tools.tools.get(name)?.idempotent === true

const declaresApproval = new WeakMap<object, boolean>()

/**
 * Whether any tool of the registry declares approval (computed once per
 * registry). A turn whose tools declare none dispatches a fresh step's
 * calls without looking for approvals.
 *
 * @since 0.3.0
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
