/**
 * The fields of a tool call as the journal records it, shared by the entries
 * that record one.
 */
import * as Schema from "effect/Schema"
import { Count, Ordinal, Sha256 } from "./entryFields.ts"

// A call of a step with the size and digest of its JSON input, as both `ToolCalled` and `ApprovalRequested` record
// it: the digest an approval is asked about is the one the call then runs with.
export const callInput = {
  turn: Ordinal,
  step: Ordinal,
  callId: Schema.String,
  name: Schema.String,
  inputSize: Count,
  inputSha256: Sha256
}
