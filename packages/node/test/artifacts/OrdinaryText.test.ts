import { assert, describe, it } from "@effect/vitest"
import { DefaultRedactor } from "@tessera/artifacts"
import { ordinaryText } from "./utils/ordinaryText.ts"

/** The lines of `text` (by index) that a redaction changes. */
const changedLines = (text: string, spans: ReadonlyArray<DefaultRedactor.Span>): ReadonlySet<number> => {
  const changed = new Set<number>()
  let line = 0
  let at = 0
  for (const span of spans) {
    for (; at < span.start; at++) if (text.charCodeAt(at) === 10) line++
    changed.add(line)
    for (; at < span.end; at++) if (text.charCodeAt(at) === 10) changed.add(++line)
  }
  return changed
}

describe("ordinary text", () => {
  it("source code, type declarations, prose, a lockfile, logs, UUIDs, git SHAs and base64 images: at most 1% of lines change, and the rate is printed", () => {
    const redactor = DefaultRedactor.make()
    let lines = 0
    let changed = 0
    const flagged: Array<string> = []
    for (const document of ordinaryText()) {
      const all = document.text.split("\n")
      const spans = redactor.spans(document.text)
      const touched = changedLines(document.text, spans)
      lines += all.length
      changed += touched.size
      for (const index of touched)
        flagged.push(`  ${document.name}:${index + 1} ${JSON.stringify(all[index]?.trim().slice(0, 140))}`)
    }
    const rate = changed / lines
    console.log(`ordinary text: ${changed} of ${lines} lines changed (${(rate * 100).toFixed(4)}%)`)
    for (const line of flagged) console.log(line)
    assert.isAtLeast(lines, 100_000)
    assert.isAtMost(rate, 0.01)
  })

  it("negative control: the line count sees a change (a rule that matches every line number flags them all)", () => {
    const greedy = DefaultRedactor.make({ rules: [{ name: "any-line", pattern: "^.", flags: "m", maxLength: 1 }] })
    const text = "a\nb\nc"
    assert.strictEqual(changedLines(text, greedy.spans(text)).size, 3)
  })
})
