/**
 * Lexical resolution of an artifact target below an artifact root.
 *
 * The target does not exist yet when an offload is planned, so its real path
 * cannot be asked for: the first line of defence is purely lexical and runs
 * with or without a host policy. It accepts only a relative path that stays
 * below the root once `.` and `..` are applied, whichever separator (`/` or
 * `\`) the caller used. Symlinks are dealt with later, by the real-path checks
 * of the offload itself.
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { exceedsUtf8 } from "./internal/utf8.ts"

/**
 * The longest target, in UTF-8 bytes, that resolution takes: Linux's
 * `PATH_MAX`, so no target the file system could hold is refused. It also
 * bounds the segment count (at most 2,048), so no caller that hands the
 * segments on (as arguments to a join, say) meets a size the engine cannot
 * take.
 *
 * @since 0.1.0
 * @category limits
 */
export const maxTargetBytes = 4096

/**
 * Why a target was refused:
 *
 * - `Empty`: no file name is left once `.` and empty segments are dropped.
 * - `NulByte`: the target contains a NUL character, which no file system accepts
 *   and which some APIs silently truncate at.
 * - `Absolute`: a POSIX absolute path (`/x`), a rooted Windows path (`\x`), a
 *   UNC path (`\\server\share`, `//server`) or a drive path (`C:\x`, `C:x`); a
 *   drive designator is refused in any segment, since Windows would read it as
 *   one (or as an alternate data stream) wherever it appears.
 * - `Traversal`: a `..` segment climbs above the root.
 * - `TooLong`: the target is longer than {@link maxTargetBytes}; checked
 *   first, before the target is split, so its cost is bounded too.
 *
 * @since 0.1.0
 * @category models
 */
export const ArtifactPathProblem = Schema.Literals(["Empty", "NulByte", "Absolute", "Traversal", "TooLong"])
/**
 * @since 0.1.0
 * @category models
 */
export type ArtifactPathProblem = typeof ArtifactPathProblem.Type

/**
 * The target is not a relative path that stays below the artifact root.
 * Nothing was created.
 *
 * @since 0.1.0
 * @category errors
 */
export class ArtifactPathRejected extends Schema.TaggedError<ArtifactPathRejected>()("ArtifactPathRejected", {
  target: Schema.String,
  problem: ArtifactPathProblem
}) {
  override get message(): string {
    // A target over the limit is shown by its start only: the message must not be as long as the target.
    const shown =
      this.target.length <= shownTargetUnits
        ? JSON.stringify(this.target)
        : `${JSON.stringify(Array.from(this.target.slice(0, shownTargetUnits)).slice(0, -1).join(""))}…`
    return `artifact target ${shown} rejected (${this.problem}): it must be a relative path of at most ${maxTargetBytes} bytes that stays below the artifact root`
  }
}

/**
 * A target that passed lexical resolution: its normalised segments and the
 * same path joined with `/`, which is how pointers name it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ArtifactRelativePath {
  readonly segments: ReadonlyArray<string>
  readonly relative: string
}

const drivePrefix = /^[A-Za-z]:/

// How much of a target a rejection's message shows, in UTF-16 units (the last code point, maybe cut, is dropped).
const shownTargetUnits = 200

/**
 * Resolves `target` lexically below an (unnamed) root. Iterative, and
 * refuses a target over {@link maxTargetBytes} before splitting it, so any
 * string gets a result (never a stack overflow), in time linear in at most
 * {@link maxTargetBytes} units.
 *
 * @since 0.1.0
 * @category resolution
 */
export const resolveRelative = (target: string): Result.Result<ArtifactRelativePath, ArtifactPathRejected> => {
  const refuse = (problem: ArtifactPathProblem) => Result.fail(new ArtifactPathRejected({ target, problem }))
  if (exceedsUtf8(target, maxTargetBytes)) return refuse("TooLong")
  if (target.includes("\0")) return refuse("NulByte")
  if (target.startsWith("/") || target.startsWith("\\") || drivePrefix.test(target)) return refuse("Absolute")
  const segments: Array<string> = []
  for (const segment of target.split(/[\\/]/)) {
    if (segment === "" || segment === ".") continue
    if (drivePrefix.test(segment)) return refuse("Absolute")
    if (segment === "..") {
      if (segments.length === 0) return refuse("Traversal")
      segments.pop()
      continue
    }
    segments.push(segment)
  }
  if (segments.length === 0) return refuse("Empty")
  return Result.succeed({ segments, relative: segments.join("/") })
}
