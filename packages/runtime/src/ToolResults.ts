/**
 * What happens to a tool result before it enters the next request: the
 * hooks that offload a large one to disk, the hook that holds what stays
 * inline to a hard limit, and the read tool that brings an offloaded one
 * back.
 *
 * Offload: the body goes to disk under the task's artifact root, and the
 * model (and the journal) get a one-line pointer instead. Private tasks
 * offload onto their agent-private volume, which needs the
 * `PrivateSummaries.PrivateSummaries` capability in the type, exactly like
 * summary staging; public results go to the task's output volume and need
 * only its (already checked) output binding. A refused or failed offload
 * keeps the result inline: the content is never lost.
 *
 * Inline limit: a result that was not offloaded (no offload configured, or
 * the offload was refused, for example on a full disk) would enter the
 * history whole, and every request after it would carry it until compaction
 * summarizes it, in as many summary requests as it has pieces. A result
 * above the inline limit is therefore cut before it enters the history: its
 * first bytes are kept, followed by a note that says how large it was and
 * that the rest was not kept. The limit applies last, after offload and
 * after the harness's own `onToolResult` hooks, so it holds for whatever
 * those leave inline. What the model itself sends (a tool call's input, its
 * own text) is never cut in the history; summary requests render it held to
 * the same limit instead.
 *
 * The read tool: reads an offloaded artifact back by the path its pointer
 * carries, whole, by byte range, by line range, or as the lines containing a
 * text, and never returns more than a fixed number of bytes, all of its
 * output counted. What it may read is decided per call, from the task
 * context, never from the model's input: the artifact folder of the task's
 * private writer (when the `PrivateSummaries` capability resolves) and of
 * each volume the task's own scope grants read or write on, in that order. A
 * granted volume counts only while it is in the runtime's custody, is not a
 * journal, and, when it is `AgentPrivate`, is owned by the task's own agent:
 * a grant never opens another agent's private content. The path is checked
 * (relative, canonical, free of `..`), the file is opened following no
 * symlink at any step, and its real location is checked to lie below the
 * volume's real artifact folder. Every refusal is an
 * {@link ArtifactReadRefused} naming the problem, which the tool turns into
 * a tool-error result the model reads; it is never a defect.
 *
 * @since 0.1.0
 */

/**
 * The hard limit on a result kept inline: the hook that applies it
 * ({@link inlineLimitHooks}) and its default under a compaction policy
 * ({@link defaultInlineBytes}). Declared in the package's internals.
 *
 * @since 0.1.0
 * @category inline limit
 */
export { defaultInlineBytes, inlineLimitHooks } from "./internal/inlineLimit.ts"
/**
 * Offloading large results: the configuration ({@link OffloadConfig}), the
 * targets only the library makes ({@link OffloadTarget},
 * {@link privateTarget}, {@link outputTarget}), and the `onToolResult` hook
 * that checks its target and offloads ({@link offloadHooks}, needing
 * {@link OffloadRequirements}), and the one-result step the hook runs
 * ({@link offloadResult}). Declared in the package's internals.
 *
 * @since 0.1.0
 * @category offload
 */
/**
 * Where an offloaded result is written: its relative target
 * ({@link resultTarget}), whose call segment ({@link callIdSegment}) encodes
 * the provider's call id one-to-one, so two calls never share an artifact.
 * Declared in the package's internals.
 *
 * @since 0.1.0
 * @category paths
 */
export {
  callIdSegment,
  type OffloadConfig,
  type OffloadRequirements,
  type OffloadTarget,
  offloadHooks,
  offloadResult,
  outputTarget,
  privateTarget,
  resultTarget
} from "./internal/offload.ts"
/**
 * The read tool that offload pointers name: the ready tool
 * ({@link readTool}), one read without the tool ({@link readArtifact}), its
 * input ({@link ReadRequest}), options ({@link ReadOptions}), result
 * ({@link ReadResult}) and refusal ({@link ArtifactReadRefused},
 * {@link ArtifactReadProblem}), its default name
 * ({@link defaultReadToolName}), and its wiring into a turn
 * ({@link registerUnlessNamed}, {@link sparing}). Declared in the package's
 * internals.
 *
 * @since 0.1.0
 * @category read tool
 */
/**
 * The read tool's bounds: the default and least output cap
 * ({@link defaultReadOutputBytes}, {@link minReadOutputBytes}), the default
 * scan limit of line and pattern reads ({@link defaultReadScanBytes}), the
 * longest pattern ({@link maxReadPatternBytes}) and how much of the path
 * and pattern the output echoes ({@link readEchoBytes}); and which volumes
 * a task context may read from ({@link readableVolumes},
 * {@link ReadableVolume}). Declared in the package's internals.
 *
 * @since 0.1.0
 * @category read tool
 */
export {
  ArtifactReadProblem,
  ArtifactReadRefused,
  defaultReadOutputBytes,
  defaultReadScanBytes,
  defaultReadToolName,
  maxReadPatternBytes,
  minReadOutputBytes,
  type ReadableVolume,
  type ReadOptions,
  ReadRequest,
  type ReadResult,
  readArtifact,
  readableVolumes,
  readEchoBytes,
  readTool,
  registerUnlessNamed,
  sparing
} from "./internal/readTool.ts"
