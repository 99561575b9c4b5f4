import { DefaultRedactor } from "@tessera/artifacts"
import type { Positive } from "./ruleExamples.ts"

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * Why `redactor` did not replace exactly the example's value with one marker
 * (undefined when it did): the text before and after the value must come
 * back byte for byte, so no byte of the value survives beside the marker,
 * and nothing else is replaced.
 */
export const markerViolation = (redactor: DefaultRedactor.DefaultRedactor, example: Positive, rule?: string) => {
  const output = redactor.redactText(`${example.before}${example.secret}${example.after}`)
  const marker = rule === undefined ? "\\[REDACTED:[a-z0-9-]+\\]" : escapeRegExp(DefaultRedactor.replacementFor(rule))
  return new RegExp(`^${escapeRegExp(example.before)}${marker}${escapeRegExp(example.after)}$`).test(output)
    ? undefined
    : `expected only the value replaced, got ${JSON.stringify(output)}`
}
