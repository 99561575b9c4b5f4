/**
 * What gets scrubbed from an artifact before its bytes touch disk.
 *
 * Credential and personal-data patterns are a host's compliance surface, so
 * the host decides by providing this service (or the shipped
 * `DefaultRedactor`). The redactor returns the body to store, and the offload
 * builds everything it shows afterwards (the pointer's abstract, the size, the
 * digest) from that returned body, never from the raw input: a pointer goes
 * straight into a model's context, and rendering it from the raw text would
 * re-expose what the file no longer contains.
 *
 * **Security decision: no redactor means bytes are stored verbatim.** When no
 * `ArtifactRedactor` is provided the offload stores exactly the caller's
 * content. That is a legitimate configuration (a host that scrubs upstream, or
 * whose content is not sensitive), and it is deliberate rather than an
 * oversight: a library default that "scrubs something" would give false
 * assurance about what it did not catch. A test pins this behaviour so it
 * cannot silently change. Hosts that want scrubbing provide a redactor.
 *
 * @since 0.1.0
 */

import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/**
 * The host's redactor failed; nothing was stored (the caller keeps its
 * content inline). `detail` is the host's text and must not quote the body.
 *
 * @since 0.1.0
 * @category errors
 */
export class ArtifactRedactionFailed extends Schema.TaggedError<ArtifactRedactionFailed>()("ArtifactRedactionFailed", {
  detail: Schema.String
}) {
  override get message(): string {
    return `artifact redaction failed: ${this.detail}`
  }
}

/**
 * What a redactor does: maps a body to the body that is stored in its place.
 * The offload stores only what `redact` returns, and stores nothing when it
 * fails.
 *
 * @since 0.1.0
 * @category models
 */
export interface ArtifactRedactorShape {
  /** Returns the body to store in place of `body`. */
  readonly redact: (body: string) => Effect.Effect<string, ArtifactRedactionFailed>
}

/**
 * The host's redactor, an optional service of the offload.
 *
 * @since 0.1.0
 * @category services
 */
export class ArtifactRedactor extends Context.Service<ArtifactRedactor, ArtifactRedactorShape>()(
  "@tessera/artifacts/ArtifactRedactor"
) {}

/**
 * Provides a redactor.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (redactor: ArtifactRedactorShape): Layer.Layer<ArtifactRedactor> =>
  Layer.succeed(ArtifactRedactor)(redactor)

/**
 * The host's redactor, when it provided one: the one lookup every writer of
 * scrubbed content uses, so "no redactor means stored verbatim" is decided
 * in one place.
 *
 * @since 0.1.0
 * @category services
 */
export const provided: Effect.Effect<Option.Option<ArtifactRedactorShape>> = Effect.serviceOption(ArtifactRedactor)

/**
 * `body` as the host's redactor returns it, or unchanged when the host
 * provided none. A failing redactor fails the caller, which then stores
 * nothing.
 *
 * @example
 * ```ts
 * import { ArtifactRedactor } from "@tessera/artifacts"
 * import { Effect } from "effect"
 *
 * export const masked = ArtifactRedactor.redactIfProvided("token=abc").pipe(
 *   Effect.provide(ArtifactRedactor.layer({ redact: (body) => Effect.succeed(body.replace("abc", "***")) }))
 * )
 * ```
 *
 * @since 0.1.0
 * @category services
 */
export const redactIfProvided = (body: string): Effect.Effect<string, ArtifactRedactionFailed> =>
  Effect.flatMap(provided, (redactor) => (Option.isSome(redactor) ? redactor.value.redact(body) : Effect.succeed(body)))
