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
import { InvalidInput, renderValue } from "@tessera/core/InvalidInput"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
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

const fromLocationsEntry = "ArtifactPathPolicy.fromLocations"

const refuseLocation = (field: string, value: unknown, detail: string) =>
  new InvalidInput({ entry: fromLocationsEntry, field, value: renderValue(value), detail })

/** `/x`, `C:\x` or `C:/x`, `\\server\share` or `//server/share`: the absolute forms `isAtOrBelow` compares. */
const absoluteRoot = /^(?:\/(?![\\/])|[A-Za-z]:[\\/]|[\\/]{2}(?=[^\\/]))/

/**
 * Why `location` cannot be compared with the absolute, normalised paths
 * the offload asks about, or `undefined` when it can. A relative location
 * never matches one (`host-state` is not at or above
 * `/srv/app/host-state/credentials.json`), and neither does one with `.`,
 * `..` or doubled separators in it: each would refuse nothing, silently.
 */
const locationProblem = (location: unknown): string | undefined => {
  if (typeof location !== "string") return "expected a string (an absolute path)"
  if (location.includes("\0")) return "a path cannot contain a NUL character"
  const root = absoluteRoot.exec(location)
  if (root === null)
    return "expected an absolute path (`/...`, `C:\\...` or `\\\\server\\share`); a relative one matches no target"
  const rest = normalise(location.slice(root[0].length))
  if (rest.length === 0) return undefined
  for (const segment of rest.split("/")) {
    if (segment === "" || segment === "." || segment === "..") {
      return "expected a normalised path: no `.`, `..` or empty segments, since targets are compared lexically"
    }
  }
  return undefined
}

/**
 * A policy from absolute locations. A host whose artifact root lies inside its
 * internal root writes its own `isUnderInternalRoot` (for example exempting
 * the artifact root), because this one refuses everything under the root.
 *
 * Every location must be a string holding an absolute, normalised path
 * without NUL: a relative location (`host-state`) never matches the
 * absolute paths the offload asks about, so it would let every write
 * through. Anything else fails `InvalidInput` naming the field
 * (`internalRoot`, `stateLocations[2]`), and no policy is made. The
 * locations are copied: changing the caller's array later changes nothing.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromLocations = (locations: InternalLocations): Result.Result<ArtifactPathPolicyShape, InvalidInput> => {
  const given: unknown = locations
  if (typeof given !== "object" || given === null) {
    return Result.fail(refuseLocation("locations", given, "expected { internalRoot, stateLocations }"))
  }
  const { internalRoot, stateLocations } = given as Record<string, unknown>
  const rootProblem = locationProblem(internalRoot)
  if (rootProblem !== undefined) return Result.fail(refuseLocation("internalRoot", internalRoot, rootProblem))
  if (!Array.isArray(stateLocations)) {
    return Result.fail(refuseLocation("stateLocations", stateLocations, "expected an array of absolute paths"))
  }
  const state: Array<string> = []
  for (let index = 0; index < stateLocations.length; index++) {
    const location: unknown = stateLocations[index]
    const problem = locationProblem(location)
    if (problem !== undefined) return Result.fail(refuseLocation(`stateLocations[${index}]`, location, problem))
    state.push(location as string)
  }
  const root = internalRoot as string
  return Result.succeed({
    isInternalState: (path) => state.some((location) => isAtOrBelow(location, path)),
    isUnderInternalRoot: (path) => isAtOrBelow(root, path)
  })
}

/**
 * The policy of a store folder a host keeps its state in and lets artifacts
 * be written to: a path at or below one of `roots` is internal unless it is
 * at or below one of `exempt` (the artifact folders), and a path at or below
 * one of `stateLocations` is internal state, exempt folders or not. The
 * locations are taken as the host computed them (absolute, normalised); a
 * host that can be handed them from outside checks them with
 * {@link fromLocations} instead.
 *
 * @example
 * ```ts
 * import { ArtifactPathPolicy } from "@tessera/artifacts"
 *
 * export const policy = ArtifactPathPolicy.internalExcept({
 *   roots: ["/srv/tessera/store"],
 *   exempt: ["/srv/tessera/store/volumes/output/artifacts"],
 *   stateLocations: ["/srv/tessera/store/store.json", "/srv/tessera/store/meta"]
 * })
 * policy.isUnderInternalRoot("/srv/tessera/store/volumes/output/artifacts/report.txt") // false
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const internalExcept = (locations: {
  readonly roots: ReadonlyArray<string>
  readonly exempt: ReadonlyArray<string>
  readonly stateLocations: ReadonlyArray<string>
}): ArtifactPathPolicyShape => {
  const roots = [...locations.roots]
  const exempt = [...locations.exempt]
  const state = [...locations.stateLocations]
  return {
    isInternalState: (path) => state.some((location) => isAtOrBelow(location, path)),
    isUnderInternalRoot: (path) =>
      roots.some((root) => isAtOrBelow(root, path)) && !exempt.some((folder) => isAtOrBelow(folder, path))
  }
}

/**
 * Provides a policy.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (policy: ArtifactPathPolicyShape): Layer.Layer<ArtifactPathPolicy> =>
  Layer.succeed(ArtifactPathPolicy)(policy)

/**
 * Provides the policy {@link fromLocations} makes, failing the layer with
 * its `InvalidInput` when a location is refused.
 *
 * @example
 * ```ts
 * import * as path from "node:path"
 * import { ArtifactPathPolicy } from "@tessera/artifacts"
 * import { Effect, Layer } from "effect"
 *
 * const hostState = "/srv/app/host-state"
 *
 * // No offload writes under the host's state folder; its credentials file is internal state besides.
 * export const pathPolicy = ArtifactPathPolicy.layerFromLocations({
 *   internalRoot: hostState,
 *   stateLocations: [path.join(hostState, "credentials.json")]
 * })
 *
 * // A relative location would match no target and refuse nothing: the layer fails, naming the field.
 * export const refused = Layer.build(
 *   ArtifactPathPolicy.layerFromLocations({ internalRoot: "host-state", stateLocations: [] })
 * ).pipe(
 *   Effect.flip,
 *   Effect.map((error) => error.field), // "internalRoot"
 *   Effect.scoped
 * )
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromLocations = (locations: InternalLocations): Layer.Layer<ArtifactPathPolicy, InvalidInput> =>
  Layer.effect(ArtifactPathPolicy)(Effect.fromResult(fromLocations(locations)))
