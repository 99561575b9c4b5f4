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

/**
 * Where a running call says it waits for the host after all: a delegation whose children wait for approvals
 * sets `children` (each child task and call id), and the approval-aware dispatch (`Executor.dispatchStep`), which
 * provides a fresh one per call, journals the call as awaiting approval (`Delegated`) instead of its result.
 * `None` where the dispatch cannot wait (`Executor.dispatchTools`): the call's result stands.
 */
export interface CallAwaiting {
  children: ReadonlyArray<{ readonly task: Ids.TaskId; readonly callId: string }> | undefined
}

/** The current call's {@link CallAwaiting}, when its dispatch can wait. */
export const CurrentCallAwaiting = Context.Reference<Option.Option<CallAwaiting>>(
  "@tessera/runtime/internal/CurrentCallAwaiting",
  { defaultValue: () => Option.none() }
)
