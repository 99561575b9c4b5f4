/**
 * The one-line change to Effect's `Channel.fromTransform` that keeps V8 from
 * allocating every channel's closure in the old generation, as text to apply
 * to `effect/dist/Channel.js` (see `ChannelClosureFix.ts`, the module hook
 * that applies it in one benchmark process).
 *
 * V8's parser marks a function literal assigned directly to a property
 * (`self.transform = (upstream, scope) => ...`) as long-lived and allocates
 * the closure in the old generation. Effect 4.1 builds every channel that
 * way, so each model call's `Stream` leaves old closures behind that reach
 * the call's young data (the request, its parts, the tool results); until the
 * next full collection they keep that data alive through every young
 * collection, which then promotes it (bench/NOTES.md, ninth round). Bound to
 * a variable first, the same closure is allocated young like any other.
 */

/** The line of effect 4.1's `dist/Channel.js` whose closure V8 allocates in the old generation. */
export const pretenuredLine =
  "  self.transform = (upstream, scope) => Effect.catchCause(transform(upstream, scope), cause => Effect.succeed(Effect.failCause(cause)));"

/** The same closure, bound to a variable before it is stored. */
export const youngLines =
  "  const wrapped = (upstream, scope) => Effect.catchCause(transform(upstream, scope), cause => Effect.succeed(Effect.failCause(cause)));\n" +
  "  self.transform = wrapped;"

/** `source` with the line replaced; throws when the line is not there exactly once. */
export const rewriteChannel = (source: string): string => {
  const at = source.indexOf(pretenuredLine)
  if (at < 0 || source.indexOf(pretenuredLine, at + 1) >= 0)
    throw new Error("ChannelClosure: effect/dist/Channel.js no longer has the line to rewrite")
  return source.slice(0, at) + youngLines + source.slice(at + pretenuredLine.length)
}

/** Whether `url` is Effect's own `Channel` module. */
export const isEffectChannel = (url: string): boolean => /\/node_modules\/effect\/dist\/Channel\.js$/.test(url)
