/**
 * Delegation as an AI SDK tool: the runtime's own `delegate` tool
 * (`Delegation.tool`), run by the AI SDK for the middleware's bound task.
 * The runtime tool names its children after the call's place in the
 * parent's journal (`Tool.CurrentCall`), which the stock executor sets
 * around each call it dispatches; here the AI SDK dispatches the call, so
 * the place is the one the middleware journaled the asking response at
 * ({@link makeCallPositions}), and the call runs with the parent's journal
 * and platform the middleware captured.
 */
import type * as Ids from "@tessera/core/Ids"
import type * as Delegation from "@tessera/runtime/Delegation"
import { type Journal, openTurn } from "@tessera/runtime/Journal"
import * as Observability from "@tessera/runtime/Observability"
import * as Tool from "@tessera/runtime/Tool"
import { type Tool as AiTool, jsonSchema, tool } from "ai"
import * as Cause from "effect/Cause"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"

/**
 * What a model sends the `delegate` tool: the sub-tasks, each an offered
 * agent and its instruction (the runtime tool's input, which it decodes).
 */
export interface DelegateRequest {
  readonly tasks: ReadonlyArray<{ readonly agent: string; readonly task: string }>
}

/** The AI SDK tool of a delegation: the request in, every child's labelled answer out. */
export type DelegateTool = AiTool<DelegateRequest, string>

/** What the runtime `delegate` tool of a child harness `H` offering children that need `RChild` needs to run. */
export type DelegateServices<H extends Delegation.ChildHarness<unknown, unknown, unknown>, RChild> = ToolServices<
  Effect.Success<ReturnType<typeof Delegation.tool<H, RChild>>>
>

type ToolServices<T> = T extends Tool.Tool<infer R> ? R : never

/**
 * Where each call the middleware saw was asked for: the turn and step of the
 * response that asked for it, recorded as the response passes through the
 * middleware (a streamed call as soon as its part does, since the AI SDK may
 * run it before the stream ends).
 */
export interface CallPositions {
  readonly record: (callId: string, at: { readonly turn: number; readonly step: number }) => void
  /**
   * The call's position: as recorded, or, for a call this middleware never
   * saw (a middleware made again after a crash, over a journal whose open
   * turn still owes the call), the open turn's last step. `None` for a call
   * no journaled response asked for.
   */
  readonly locate: (callId: string) => Effect.Effect<Option.Option<Tool.CallPosition>>
}

/** The positions of one task's calls, over the task's journal (see {@link CallPositions}). */
export const makeCallPositions = (task: Ids.TaskId, journal: Journal["Service"]): CallPositions => {
  // The latest response asking for an id wins: a provider that reuses an id in a later step asks for a new call.
  const recorded = new Map<string, { readonly turn: number; readonly step: number }>()
  return {
    record: (callId, at) => {
      recorded.set(callId, at)
    },
    locate: (callId) =>
      Effect.suspend(() => {
        const known = recorded.get(callId)
        if (known !== undefined) return Effect.succeedSome({ task, callId, ...known })
        return Effect.map(journal.state, (state) =>
          Option.flatMap(openTurn(state), (open) =>
            open.owedCalls.some((owed) => owed.callId === callId)
              ? Option.some({ task, turn: open.turn, step: open.steps, callId })
              : Option.none()
          )
        )
      })
  }
}

/**
 * Runs `effect` for a tool's `execute`: its value, or the failure thrown; interrupted when the AI SDK aborts the
 * call (so are the children running inside it, and their turns are abandoned).
 */
const runForCall = async <A>(effect: Effect.Effect<A, Error>, signal: AbortSignal | undefined): Promise<A> => {
  const exit = await Effect.runPromiseExit(effect, signal === undefined ? undefined : { signal })
  if (Exit.isSuccess(exit)) return exit.value
  if (signal?.aborted === true && Cause.hasInterruptsOnly(exit.cause)) throw signal.reason
  throw Cause.squash(exit.cause)
}

/**
 * The AI SDK tool over a runtime `delegate` tool: its spec (the input's JSON
 * Schema is the runtime tool's), its `execute` the runtime tool's `run` with
 * `Tool.CurrentCall` at the call's journaled position and `services` (the
 * parent's journal among them) provided. A call no response asked for (none
 * passed through the middleware, the open turn owes none) runs nothing and
 * is thrown, as is a result the runtime tool marks
 * failed (an input it refused): the model gets the AI SDK's tool error
 * naming why. The result is kept through `toModelOutput` (journaled as soon
 * as it returns, offloaded when large).
 */
export const delegateTool = <R>(options: {
  readonly delegate: Tool.Tool<R>
  readonly services: Context.Context<R>
  readonly positions: CallPositions
  readonly toModelOutput: NonNullable<DelegateTool["toModelOutput"]>
}): DelegateTool => {
  const { delegate, positions, services } = options
  return tool({
    description: delegate.spec.description,
    inputSchema: jsonSchema<DelegateRequest>(delegate.spec.inputSchema as Parameters<typeof jsonSchema>[0]),
    execute: (input, { abortSignal, toolCallId }) =>
      runForCall(
        Effect.gen(function* () {
          const position = yield* positions.locate(toolCallId)
          if (Option.isNone(position)) {
            return yield* Effect.fail(
              new Error(
                `${delegate.name} call ${JSON.stringify(toolCallId)} was asked for by no response that passed through the middleware, and the task's open turn owes no such call: nothing was delegated`
              )
            )
          }
          // The input is the model's, unchecked by the AI SDK (a JSON Schema alone): the runtime tool decodes it.
          // The span inside the services: it is made with the caller's tracer, and the children's spans nest in it.
          const outcome = yield* delegate.run(input as unknown as Schema.Json).pipe(
            Effect.provideService(Tool.CurrentCall, position),
            Observability.withSpan("AiSdk.delegate", () => ({
              attributes: {
                "tessera.task": position.value.task,
                "tessera.turn": position.value.turn,
                "tessera.step": position.value.step,
                "tessera.tool.callId": toolCallId
              }
            })),
            Effect.provideContext(services)
          )
          if (Option.isSome(outcome.failure)) return yield* Effect.fail(new Error(outcome.content))
          return outcome.content
        }),
        abortSignal
      ),
    toModelOutput: options.toModelOutput
  })
}
