/**
 * Module hook for one informational run of the stream-overhead job
 * (`node --import ./ChannelClosureFix.ts child.ts stream-overhead ...`): it
 * rewrites Effect's `Channel.js` as it loads, in that process only, with
 * {@link rewriteChannel}. The rewrite is exact: when the installed Effect no
 * longer has the line, loading `Channel.js` fails, so the run cannot
 * silently measure nothing.
 */
import { registerHooks } from "node:module"
import { isEffectChannel, rewriteChannel } from "./ChannelClosure.ts"

registerHooks({
  load: (url, context, nextLoad) => {
    const loaded = nextLoad(url, context)
    if (!isEffectChannel(url) || loaded.source === undefined) return loaded
    const source = typeof loaded.source === "string" ? loaded.source : new TextDecoder().decode(loaded.source)
    return { ...loaded, source: rewriteChannel(source) }
  }
})
