/**
 * The broken wiring of the delegation controls: a child harness that runs
 * each child as a task of the parent's own agent, on the parent's scratch
 * volume (one shared scratchpad, as harnesses without isolation do), with a
 * journal of its own. A control runs a delegation scenario through it and
 * asserts the isolation checks fail.
 */
import type { ArtifactPathPolicy } from "@tessera/artifacts"
import type { LocalHarness } from "@tessera/node"
import type { Delegation, Journal } from "@tessera/runtime"
import type { FileSystem, Path } from "effect"

/** `harness` as a child harness that binds every child like one of the parent's own tasks. */
export const sharingHarness = (
  harness: LocalHarness.LocalHarnessService
): Delegation.ChildHarness<
  unknown,
  FileSystem.FileSystem | Path.Path,
  Journal.Journal | ArtifactPathPolicy.ArtifactPathPolicy
> => ({
  withChild: (_parent, child, body) => harness.withTask(child.task, body)
})
