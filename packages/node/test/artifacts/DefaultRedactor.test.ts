import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactOffload, ArtifactPointer, DefaultRedactor } from "@tessera/artifacts"
import { Effect, Option, Redacted } from "effect"
import * as fc from "fast-check"
import { nodeLayer, tempDir } from "./utils/fixtures.ts"
import { ruleExamples } from "./utils/ruleExamples.ts"

interface Sample {
  /** The rule expected to catch it. */
  readonly rule: string
  /** The text as it appears in output. */
  readonly text: string
  /** The part that must never survive. */
  readonly secret: string
}

const registered = "opaque-registered-value-42"

/** One sample per default rule (its first example), plus a registered secret value. */
const samples: ReadonlyArray<Sample> = [
  ...DefaultRedactor.defaultRules.map((rule): Sample => {
    const example = ruleExamples[rule.name]?.positives[0]
    if (example === undefined) throw new Error(`no example for ${rule.name}`)
    // A line of its own: a token glued to the next word is not bounded, and the rules require a bound.
    return { rule: rule.name, text: `${example.before}${example.secret}${example.after}\n`, secret: example.secret }
  }),
  { rule: DefaultRedactor.registeredSecretRule, text: `value ${registered} seen`, secret: registered }
]

/** The samples the offload test splits at every offset: one per family of rule shape, short enough to split everywhere. */
const offloadSamples = samples.filter((sample) =>
  [
    "aws-access-key-id",
    "github-token",
    "jwt",
    "private-key-block",
    "mailchimp-api-key",
    "url-credentials",
    "http-basic-credentials",
    "password-assignment",
    "secret-assignment",
    DefaultRedactor.registeredSecretRule
  ].includes(sample.rule)
)

const sampleFor = (rule: string): Sample => {
  const sample = samples.find((s) => s.rule === rule)
  if (sample === undefined) throw new Error(`no sample for ${rule}`)
  return sample
}

const options: DefaultRedactor.DefaultRedactorOptions = { secrets: [Redacted.make(registered)] }
const redactor = DefaultRedactor.make(options)
const filler = "lorem ipsum dolor sit amet ".repeat(8)

const streamed = (chunks: ReadonlyArray<string>) => {
  const stream = DefaultRedactor.streaming(redactor)
  return chunks.map((chunk) => stream.push(chunk)).join("") + stream.end()
}

describe("DefaultRedactor", () => {
  it("every default rule's sample loses its secret, and a rule on its own names itself in the replacement", () => {
    for (const sample of samples) {
      assert.notInclude(redactor.redactText(sample.text), sample.secret, sample.rule)
      if (sample.rule === DefaultRedactor.registeredSecretRule) continue
      const rule = DefaultRedactor.defaultRules.find((r) => r.name === sample.rule)
      const own = DefaultRedactor.make({ rules: rule === undefined ? [] : [rule] })
      assert.include(own.redactText(sample.text), DefaultRedactor.replacementFor(sample.rule), sample.rule)
    }
  })

  it("an assigned secret keeps its name readable, and replacements are not redacted again", () => {
    const once = redactor.redactText(`{"password": "p4ss", api_key: Zq81xW0pLk3m\n}`)
    assert.strictEqual(once, `{"password": "[REDACTED:password-assignment]", api_key: [REDACTED:secret-assignment]\n}`)
    assert.strictEqual(redactor.redactText(once), once)
  })

  it("partly overlapping matches of different rules are merged and fully covered", () => {
    const token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
    const overlapping = DefaultRedactor.make({ secrets: [Redacted.make("Ae178B4a and more")] })
    assert.strictEqual(overlapping.redactText(`GH ${token} and more.`), "GH [REDACTED:github-token].")
    const jwt = sampleFor("jwt").secret
    assert.strictEqual(redactor.redactText(`Authorization: Bearer ${jwt}`), "Authorization: Bearer [REDACTED:jwt]")
  })

  it("text without secrets passes unchanged", () => {
    const text = "build ok: 42 tests, token budget 1000, see https://example.com/path"
    assert.strictEqual(redactor.redactText(text), text)
  })

  it("the streaming redactor catches a secret split at every offset across a chunk boundary", () => {
    for (const sample of samples) {
      const body = `${filler}${sample.text}${filler}`
      const whole = redactor.redactText(body)
      for (let k = 0; k <= sample.text.length; k++) {
        const cut = filler.length + k
        const output = streamed([body.slice(0, cut), body.slice(cut)])
        assert.notInclude(output, sample.secret, `${sample.rule} split at ${k}`)
        assert.strictEqual(output, whole, `${sample.rule} split at ${k}`)
      }
    }
  })

  it("property: streamed output equals whole-body redaction for any chunking", () => {
    fc.assert(
      fc.property(
        fc.record({
          sample: fc.constantFrom(...samples.map((s) => s.rule)),
          before: fc.nat({ max: 300 }),
          after: fc.nat({ max: 300 }),
          cuts: fc.uniqueArray(fc.nat({ max: 1000 }), { maxLength: 6 })
        }),
        ({ after, before, cuts, sample }) => {
          const chosen = sampleFor(sample)
          const body = `${"x ".repeat(before)}${chosen.text}${" y".repeat(after)}`
          const points = [...cuts.filter((c) => c < body.length)].sort((a, b) => a - b)
          const chunks = [0, ...points].map((start, i) => body.slice(start, points[i] ?? body.length))
          const output = streamed(chunks)
          assert.notInclude(output, chosen.secret)
          assert.strictEqual(output, redactor.redactText(body))
        }
      ),
      { numRuns: 300 }
    )
  })

  it("streaming over bodies longer than the window: the output equals whole-body redaction for any chunk sizes", () => {
    const body = samples.map((sample, index) => `${"log line ".repeat(index * 7)}${sample.text}\n`).join("")
    assert.isAbove(body.length, 2 * redactor.window, "the stream releases text before its end")
    const whole = redactor.redactText(body)
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 20_000 }), { minLength: 1, maxLength: 40 }), (sizes) => {
        const chunks: Array<string> = []
        for (let at = 0, index = 0; at < body.length; index++) {
          const size = sizes[index % sizes.length] ?? 1
          chunks.push(body.slice(at, at + size))
          at += size
        }
        const output = streamed(chunks)
        assert.strictEqual(output, whole)
        for (const sample of samples) assert.notInclude(output, sample.secret, sample.rule)
      }),
      { numRuns: 25 }
    )
  })

  it("a stream is never cut between a secret's name and its value; negative control: cutting only outside replaced regions leaks it", () => {
    const passwordRule = DefaultRedactor.defaultRules.filter((rule) => rule.name === "password-assignment")
    const own = DefaultRedactor.make({ rules: passwordRule })
    const value = "Tr0ub4dor-and-3"
    // Longer than the window, so the first chunk is scanned on arrival.
    const lead = "x ".repeat(own.window)
    // The first chunk ends so that its release point falls between DB_PASS and WORD=.
    const cutAt = lead.length + "DB_PASS".length
    const first = `${lead}DB_PASSWORD=${value} `.padEnd(cutAt + own.window, "y")
    const chunks = [first, " trailing text"]
    const body = chunks.join("")

    const stream = DefaultRedactor.streaming(own)
    const output = chunks.map((chunk) => stream.push(chunk)).join("") + stream.end()
    assert.strictEqual(output, own.redactText(body))
    assert.notInclude(output, value)

    // The former cut rule: move the cut only out of replaced regions, which start after the name.
    const former = (redactor: DefaultRedactor.DefaultRedactor) => {
      let pending = ""
      const render = (text: string, spans: ReadonlyArray<DefaultRedactor.Span>) =>
        spans.reduceRight(
          (out, span) => out.slice(0, span.start) + DefaultRedactor.replacementFor(span.rule) + out.slice(span.end),
          text
        )
      return {
        push: (chunk: string) => {
          pending += chunk
          if (pending.length <= redactor.window) return ""
          const spans = redactor.spans(pending)
          let cut = pending.length - redactor.window
          for (const span of spans) if (span.start < cut && span.end > cut) cut = span.start
          const released = render(
            pending.slice(0, cut),
            spans.filter((span) => span.end <= cut)
          )
          pending = pending.slice(cut)
          return released
        },
        end: () => redactor.redactText(pending)
      }
    }
    const broken = former(own)
    assert.include(chunks.map((chunk) => broken.push(chunk)).join("") + broken.end(), value)
  })

  it("a chunk boundary right where a rule's look behind reads does not hide a secret; negative control: a stream that keeps no released text leaks it", () => {
    const own = DefaultRedactor.make({
      rules: DefaultRedactor.defaultRules.filter((rule) => rule.name === "url-credentials")
    })
    const line = "dsn postgres://admin:S3cr3t-pw@db.internal/app "
    const lead = "x ".repeat(own.window)
    // The release point falls exactly at "://": the rule reads the scheme's last letter before it.
    const cutAt = lead.length + line.indexOf("://")
    const chunks = [`${lead}${line}`.padEnd(cutAt + own.window, "y"), " the end"]
    const run = (redactor: DefaultRedactor.DefaultRedactor) => {
      const stream = DefaultRedactor.streaming(redactor)
      return chunks.map((chunk) => stream.push(chunk)).join("") + stream.end()
    }
    assert.strictEqual(run(own), own.redactText(chunks.join("")))
    assert.notInclude(run(own), "S3cr3t-pw")
    assert.include(run({ ...own, context: 0 }), "S3cr3t-pw")
  })

  it("a chunk boundary inside the name of a line-start assignment: the stream sees back to the line's start, so it redacts what whole-body redaction does and nothing else; negative control: a stream that keeps no released text takes the cut for a line start", () => {
    const own = DefaultRedactor.make({
      rules: DefaultRedactor.defaultRules.filter((rule) => rule.name === "config-secret-assignment")
    })
    assert.isAtLeast(own.context, 100, "the rule declares how far back it reads")
    const lead = "x ".repeat(own.window)
    // The release point falls right before TOKEN: whether GITHUB_TOKEN starts its line is decided before it.
    const chunksFor = (line: string) => {
      const cutAt = lead.length + line.indexOf("TOKEN")
      return [`${lead}${line}`.padEnd(cutAt + own.window, "y"), " the end"]
    }
    const run = (redactor: DefaultRedactor.DefaultRedactor, chunks: ReadonlyArray<string>) => {
      const stream = DefaultRedactor.streaming(redactor)
      return chunks.map((chunk) => stream.push(chunk)).join("") + stream.end()
    }
    const starting = chunksFor("\n  export GITHUB_TOKEN=opensesame\n")
    const inside = chunksFor("\nrun it with GITHUB_TOKEN=opensesame later\n")
    assert.notInclude(run(own, starting), "opensesame")
    assert.strictEqual(run(own, starting), own.redactText(starting.join("")))
    assert.include(own.redactText(inside.join("")), "opensesame")
    assert.strictEqual(run(own, inside), own.redactText(inside.join("")))
    assert.notStrictEqual(run({ ...own, context: 0 }, inside), own.redactText(inside.join("")))
  })

  it.effect(
    "property: a secret from each family of rule, placed at every offset across a chunk boundary, never reaches the file, the abstract, the journal record or an error message",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const root = path.join(dir, "artifacts")
        const blocked = path.join(dir, "blocked")
        fs.writeFileSync(blocked, "")
        for (const sample of offloadSamples) {
          const body = `${sample.text}${filler}`
          for (let k = 0; k <= sample.text.length; k++) {
            const chunks = [body.slice(0, k), body.slice(k)]
            const label = `${sample.rule} split at ${k}`
            const base = { content: chunks, threshold: 16, readTool: "read_file", abstractBytes: 400 }
            const result = yield* ArtifactOffload.offload({ ...base, root, target: `t/${sample.rule}-${k}.txt` })
            assert.strictEqual(result._tag, "Offloaded", label)
            if (result._tag !== "Offloaded") continue
            const stored = fs.readFileSync(path.join(root, "t", `${sample.rule}-${k}.txt`), "utf8")
            assert.notInclude(stored, sample.secret, label)
            assert.notInclude(result.pointer, sample.secret, label)
            assert.notInclude(Option.getOrThrow(ArtifactPointer.parse(result.pointer)).abstract, sample.secret, label)
            assert.notInclude(JSON.stringify(ArtifactOffload.toRecord(result)), sample.secret, label)

            // A failure after redaction: the record and the error carry no secret either.
            const failed = yield* ArtifactOffload.offload({ ...base, root: blocked, target: `t/${k}.txt` })
            assert.strictEqual(failed._tag, "Inline", label)
            if (failed._tag !== "Inline" || Option.isNone(failed.reason)) continue
            const error = failed.reason.value
            assert.notInclude(`${error.message} ${JSON.stringify(error)} ${String(error)}`, sample.secret, label)
            assert.notInclude(JSON.stringify(ArtifactOffload.toRecord(failed)), sample.secret, label)
          }
        }
      }).pipe(Effect.provide([nodeLayer, DefaultRedactor.layer(options)]))
  )
})
