import * as fs from "node:fs"
import * as path from "node:path"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactOffload, ArtifactPointer, DefaultRedactor } from "@tessera/artifacts"
import { Effect, Option, Redacted } from "effect"
import * as fc from "fast-check"
import { nodeLayer, tempDir } from "./utils/fixtures.ts"

interface Sample {
  /** The rule expected to catch it. */
  readonly rule: string
  /** The text as it appears in output. */
  readonly text: string
  /** The part that must never survive. */
  readonly secret: string
}

const registered = "opaque-registered-value-42"

/** One sample per default rule, plus a registered secret value. */
const samples: ReadonlyArray<Sample> = [
  { rule: "aws-access-key-id", text: "key AKIAIOSFODNN7EXAMPLE used", secret: "AKIAIOSFODNN7EXAMPLE" },
  {
    rule: "aws-secret-access-key",
    text: "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
    secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
  },
  {
    rule: "github-token",
    text: "GH_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a end",
    secret: "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
  },
  {
    rule: "github-fine-grained-token",
    text: "token github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRS!",
    secret: "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRS"
  },
  { rule: "gitlab-token", text: "use glpat-Xy9_aBcDeFgHiJkLmNoPqRsT now", secret: "glpat-Xy9_aBcDeFgHiJkLmNoPqRsT" },
  {
    rule: "jwt",
    text: "session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ok",
    secret: "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
  },
  {
    rule: "private-key-block",
    text: "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\nKUpRKfFLfRYC9AIKjbJTWit+CqvjWYzvQwECAwEAAQ==\n-----END RSA PRIVATE KEY-----\n",
    secret: "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu"
  },
  {
    rule: "bearer-token",
    text: "Authorization: Bearer abcDEF123.456-ghi_jkl~mno\n",
    secret: "abcDEF123.456-ghi_jkl~mno"
  },
  { rule: "key-value-secret", text: "login password=hunter2-Correct-Horse ok", secret: "hunter2-Correct-Horse" },
  {
    rule: "connection-string-password",
    text: "dsn postgres://admin:S3cr3tPassw0rd@db.internal:5432/app",
    secret: "S3cr3tPassw0rd"
  },
  { rule: DefaultRedactor.registeredSecretRule, text: `value ${registered} seen`, secret: registered }
]

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
  it("every default rule catches its sample and names itself in the replacement", () => {
    assert.deepStrictEqual(
      [...new Set(samples.map((s) => s.rule))].sort(),
      [...DefaultRedactor.defaultRules.map((r) => r.name), DefaultRedactor.registeredSecretRule].sort()
    )
    for (const sample of samples) {
      const redacted = redactor.redactText(sample.text)
      assert.notInclude(redacted, sample.secret, sample.rule)
      assert.include(redacted, DefaultRedactor.replacementFor(sample.rule), sample.rule)
    }
  })

  it("a key=value secret keeps its key readable, and replacements are not redacted again", () => {
    assert.strictEqual(
      redactor.redactText(`{"password": "p4ss", api_key: k3y\n}`),
      `{"password": "[REDACTED:key-value-secret]", api_key: [REDACTED:key-value-secret]\n}`
    )
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

  it.effect(
    "property: a secret from each default rule, placed at every offset across a chunk boundary, never reaches the file, the abstract, the journal record or an error message",
    () =>
      Effect.gen(function* () {
        const dir = yield* tempDir
        const root = path.join(dir, "artifacts")
        const blocked = path.join(dir, "blocked")
        fs.writeFileSync(blocked, "")
        for (const sample of samples) {
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
