/** A tracer that keeps every span it starts, for tests that check what a trace shows. */
import { Tracer } from "effect"

export const recordSpans = () => {
  const spans: Array<Tracer.Span> = []
  const tracer = Tracer.make({
    span(options) {
      const span = Tracer.nativeTracer.span(options)
      spans.push(span)
      return span
    }
  })
  const named = (name: string): ReadonlyArray<Tracer.Span> => spans.filter((span) => span.name === name)
  return { tracer, named }
}
