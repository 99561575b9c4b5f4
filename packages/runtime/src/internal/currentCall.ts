/**
 * The tool call a tool's handler is running for: the executor sets it
 * around every call it dispatches, so a tool that must name what it does
 * after the call (a child task of a delegation) derives that name from the
 * call's place in the journal instead of inventing one.
 */

import type * as Ids from "@tessera/core/Ids"
import * as Context from "effect/Context"
import * as Option from "effect/Option"

/** Where a call is: its task, turn and step, and the model's id for it. */
export interface CallPosition {
  readonly task: Ids.TaskId
  readonly turn: number
  readonly step: number
  readonly callId: string
}

/** See `Tool.CurrentCall`. */
export const CurrentCall = Context.Reference<Option.Option<CallPosition>>("@tessera/runtime/Tool/CurrentCall", {
  defaultValue: () => Option.none()
})
