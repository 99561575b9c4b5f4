/**
 * The default redactor against two corpora it was not written from: real-format
 * secrets (`realFormatSecrets.ts`), of which at least 98% must lose their value,
 * and ordinary agent output (`agentOutput.ts`), of which under 0.05% of lines
 * may change. Both rates are printed, with every miss and every changed line.
 */
import { assert, describe, it } from "@effect/vitest"
import { DefaultRedactor } from "@tessera/artifacts"
import { realFormatSecrets } from "../runtime/support/realFormatSecrets.ts"
import { type CorpusEntry, leaked } from "../runtime/support/secretCorpus.ts"
import { agentOutput } from "./utils/agentOutput.ts"
import { formerPagination, rulesBefore } from "./utils/formerRules.ts"

const requiredRedacted = 0.98
const allowedChanged = 0.0005

const misses = (redactor: DefaultRedactor.DefaultRedactor): ReadonlyArray<CorpusEntry> =>
  realFormatSecrets.filter((entry) => leaked(redactor.redactText(entry.text), entry.secret))

const redactedShare = (missed: ReadonlyArray<CorpusEntry>) => 1 - missed.length / realFormatSecrets.length

/** The lines (as family and text) of the agent output that `redactor` changes, and how many lines there are. */
const changedLines = (redactor: DefaultRedactor.DefaultRedactor) => {
  const changed: Array<string> = []
  let lines = 0
  for (const family of agentOutput()) {
    for (const line of family.lines) {
      lines++
      if (redactor.redactText(line) !== line) changed.push(`  [${family.name}] ${JSON.stringify(line.slice(0, 160))}`)
    }
  }
  return { changed, lines }
}

describe("real-format secrets", () => {
  it("the corpus holds at least 150 secrets of at least 40 kinds, each inside its text", () => {
    const kinds = new Set(realFormatSecrets.map((entry) => entry.kind))
    console.log(`real-format corpus: ${realFormatSecrets.length} secrets of ${kinds.size} kinds`)
    assert.isAtLeast(realFormatSecrets.length, 150)
    assert.isAtLeast(kinds.size, 40)
    for (const entry of realFormatSecrets) assert.include(entry.text, entry.secret, entry.kind)
  })

  it("at least 98% lose their value through the default redactor; the rate is printed and every miss listed with its kind", () => {
    const missed = misses(DefaultRedactor.make())
    const rate = redactedShare(missed)
    console.log(
      `real-format corpus: ${realFormatSecrets.length - missed.length}/${realFormatSecrets.length} redacted (${(rate * 100).toFixed(1)}%)`
    )
    for (const miss of missed) console.log(`  MISS [${miss.kind}] ${JSON.stringify(miss.text.slice(0, 160))}`)
    assert.isAtLeast(rate, requiredRedacted)
  })

  it("the streaming redactor, fed the whole corpus in small chunks, releases the same text as whole-body redaction", () => {
    const redactor = DefaultRedactor.make()
    const body = realFormatSecrets.map((entry) => entry.text).join("\n\n")
    const stream = DefaultRedactor.streaming(redactor)
    let output = ""
    for (let at = 0; at < body.length; at += 997) output += stream.push(body.slice(at, at + 997))
    output += stream.end()
    assert.strictEqual(output, redactor.redactText(body))
  })

  it("negative control: the rules with this corpus's fixes taken out stay below the 98% bar", () => {
    const missed = misses(DefaultRedactor.make({ rules: rulesBefore() }))
    const rate = redactedShare(missed)
    console.log(`real-format corpus, former rules: ${(rate * 100).toFixed(1)}% redacted`)
    assert.isBelow(rate, requiredRedacted)
  })
})

describe("ordinary agent output", () => {
  it("at least 5,000 lines of build logs, git, cloud CLI output, lockfiles, test runs, listings, CSV and code: under 0.05% change; the rate is printed with every changed line", () => {
    const { changed, lines } = changedLines(DefaultRedactor.make())
    const rate = changed.length / lines
    console.log(`agent output: ${changed.length} of ${lines} lines changed (${(rate * 100).toFixed(4)}%)`)
    for (const line of changed) console.log(line)
    assert.isAtLeast(lines, 5_000)
    assert.isBelow(rate, allowedChanged)
  })

  it("negative control: the former token names, which flagged pagination tokens, change more than 0.05% of the lines", () => {
    const { changed, lines } = changedLines(DefaultRedactor.make({ rules: formerPagination() }))
    const rate = changed.length / lines
    console.log(
      `agent output, former token names: ${changed.length} of ${lines} lines changed (${(rate * 100).toFixed(4)}%)`
    )
    assert.isAbove(rate, allowedChanged)
  })
})
