/**
 * Host policy on where artifacts must never land.
 *
 * Only the host knows where it keeps its own state, so the library asks it
 * through two separate questions with two distinct errors: a log reader can
 * then tell "somewhere under the host's internal root" apart from "exactly a
 * state location". The specific question is asked first, so its more precise
 * error wins when a path is both (which is every state path when a host keeps
 * its artifact root inside its internal root).
 *
 * An offload works without a policy: lexical containment under the artifact
 * root is enforced regardless (see `ArtifactPath`).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/**
 * The target is a specific internal state location of the host. Nothing was written.
 *
 * @since 0.1.0
 * @category errors
 */
export class ArtifactInternalState extends Schema.TaggedError<ArtifactInternalState>()("ArtifactInternalState", {
  path: Schema.String
}) {
  override get message(): string {
    return `artifact path ${this.path} is a host internal state location`
  }
}

/**
 * The target lies under the host's internal root. Nothing was written.
 *
 * @since 0.1.0
 * @category errors
 */
export class ArtifactInternalRoot extends Schema.TaggedError<ArtifactInternalRoot>()("ArtifactInternalRoot", {
  path: Schema.String
}) {
  override get message(): string {
    return `artifact path ${this.path} lies under the host's internal root`
  }
}

/**
 * The two questions, asked with the absolute path an artifact would be
 * written to (first the lexical path, then again the real path once the
 * folders exist). Each returns `true` to refuse.
 *
 * @since 0.1.0
 * @category models
 */
export interface ArtifactPathPolicyShape {
  readonly isInternalState: (absolutePath: string) => boolean
  readonly isUnderInternalRoot: (absolutePath: string) => boolean
}

/**
 * The host's policy, an optional service of the offload.
 *
 * @since 0.1.0
 * @category services
 */
export class ArtifactPathPolicy extends Context.Service<ArtifactPathPolicy, ArtifactPathPolicyShape>()(
  "@tessera/artifacts/ArtifactPathPolicy"
) {}

/**
 * Asks both questions, the specific one first.
 *
 * @since 0.1.0
 * @category checks
 */
export const check = (
  policy: ArtifactPathPolicyShape,
  absolutePath: string
): Result.Result<void, ArtifactInternalState | ArtifactInternalRoot> => {
  if (policy.isInternalState(absolutePath)) return Result.fail(new ArtifactInternalState({ path: absolutePath }))
  if (policy.isUnderInternalRoot(absolutePath)) return Result.fail(new ArtifactInternalRoot({ path: absolutePath }))
  return Result.void
}

const normalise = (path: string): string => {
  const forward = path.replace(/\\/g, "/")
  return forward.length > 1 && forward.endsWith("/") ? forward.slice(0, -1) : forward
}

/**
 * Whether `path` is `folder` or lies below it, comparing absolute paths
 * lexically and treating both separators alike.
 *
 * @since 0.1.0
 * @category checks
 */
export const isAtOrBelow = (folder: string, path: string): boolean => {
  const parent = normalise(folder)
  const child = normalise(path)
  return child === parent || child.startsWith(parent === "/" ? "/" : `${parent}/`)
}

/**
 * Where a host keeps its state, as absolute paths.
 *
 * @since 0.1.0
 * @category models
 */
export interface InternalLocations {
  /** Everything under this folder is internal. */
  readonly internalRoot: string
  /** Specific state files or folders (usually under the internal root); each covers what lies below it. */
  readonly stateLocations: ReadonlyArray<string>
}

/**
 * A policy from absolute locations. A host whose artifact root lies inside its
 * internal root writes its own `isUnderInternalRoot` (for example exempting
 * the artifact root), because this one refuses everything under the root.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromLocations = (locations: InternalLocations): ArtifactPathPolicyShape => ({
  isInternalState: (path) => locations.stateLocations.some((location) => isAtOrBelow(location, path)),
  isUnderInternalRoot: (path) => isAtOrBelow(locations.internalRoot, path)
})

/**
 * Provides a policy.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (policy: ArtifactPathPolicyShape): Layer.Layer<ArtifactPathPolicy> =>
  Layer.succeed(ArtifactPathPolicy)(policy)
