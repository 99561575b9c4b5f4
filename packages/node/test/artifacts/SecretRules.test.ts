import * as fs from "node:fs"
import { fileURLToPath } from "node:url"
import { assert, describe, it } from "@effect/vitest"
import { ArtifactRedactor, DefaultRedactor } from "@tessera/artifacts"
import { Effect, Exit } from "effect"
import * as fc from "fast-check"
import { markerViolation } from "./utils/markers.ts"
import { ruleExamples } from "./utils/ruleExamples.ts"

const rules = DefaultRedactor.defaultRules
const alone = new Map(rules.map((rule) => [rule.name, DefaultRedactor.make({ rules: [rule] })]))
const all = DefaultRedactor.make()

describe("default redaction rules", () => {
  it("there are at least 45 kinds, each rule has a unique name, a description, and true-positive and true-negative examples", () => {
    assert.isAtLeast(rules.length, 45)
    assert.strictEqual(new Set(rules.map((rule) => rule.name)).size, rules.length)
    assert.deepStrictEqual(Object.keys(ruleExamples).sort(), rules.map((rule) => rule.name).sort())
    for (const rule of rules) {
      const examples = ruleExamples[rule.name]
      assert.isAbove(examples?.positives.length ?? 0, 0, rule.name)
      assert.isAbove(examples?.negatives.length ?? 0, 0, rule.name)
      assert.isAbove(rule.description?.length ?? 0, 0, rule.name)
    }
  })

  it("docs/security-model.md lists exactly the default rules, with their descriptions", () => {
    const doc = fs.readFileSync(fileURLToPath(new URL("../../../../docs/security-model.md", import.meta.url)), "utf8")
    const listed = [...doc.matchAll(/^\| `([a-z0-9-]+)` +\| (.*?) *\|$/gm)].map(([, name, description]) => ({
      name,
      description
    }))
    assert.deepStrictEqual(
      listed,
      rules.map((rule) => ({ name: rule.name, description: rule.description?.replace(/\|/g, "\\|") }))
    )
  })

  describe("each rule on its own", () => {
    for (const rule of rules) {
      const examples = ruleExamples[rule.name] ?? { positives: [], negatives: [] }
      const redactor = alone.get(rule.name) as DefaultRedactor.DefaultRedactor
      it(`${rule.name}: replaces exactly each example's value with its marker, and leaves its negatives unchanged`, () => {
        for (const example of examples.positives) {
          assert.isUndefined(markerViolation(redactor, example, rule.name), JSON.stringify(example))
          const matches = redactor.matches(`${example.before}${example.secret}${example.after}`)
          for (const match of matches)
            assert.isAtMost(match.end - match.start, rule.maxLength, "maxLength bounds a match")
        }
        for (const negative of examples.negatives) assert.strictEqual(redactor.redactText(negative), negative)
      })
    }
  })

  it("with all default rules together, every example's whole value is replaced by one marker and nothing else changes", () => {
    for (const [name, examples] of Object.entries(ruleExamples)) {
      for (const example of examples.positives) {
        assert.isUndefined(markerViolation(all, example), `${name}: ${JSON.stringify(example)}`)
      }
    }
  })

  it("negative control: the marker check catches a rule that replaces only the operator (the former key=value rule)", () => {
    const former = DefaultRedactor.make({
      rules: [
        {
          name: "key-value-secret",
          pattern: String.raw`\b(?:password|secret)\b["']?[ \t]{0,8}[:=][ \t]{0,8}["']?(?<secret>[^\s"',;]{1,512})`,
          flags: "i",
          maxLength: 560
        }
      ]
    })
    const example = { before: 'PASSWORD := "', secret: "hunter2", after: '"' }
    assert.strictEqual(former.redactText('PASSWORD := "hunter2"'), 'PASSWORD :[REDACTED:key-value-secret] "hunter2"')
    assert.isDefined(markerViolation(former, example, "key-value-secret"))
    assert.isDefined(
      markerViolation(former, { before: '"password" => "', secret: "pw", after: '"' }, "key-value-secret")
    )
    assert.isUndefined(markerViolation(all, example))
  })

  it("property: a password-like name with any prefix, operator and quoting has exactly its value replaced", () => {
    fc.assert(
      fc.property(
        fc.record({
          prefix: fc.constantFrom("", "DB_", "MYSQL_ROOT_", "app.", "smtp-", "db"),
          name: fc.constantFrom("PASSWORD", "password", "Passwd", "passphrase"),
          keyQuote: fc.constantFrom("", '"', "'", '\\"'),
          operator: fc.constantFrom("=", ":", ":=", "?=", "=>", " = ", ": ", " => ", "+="),
          quote: fc.constantFrom("", '"', "'", "`", '\\"'),
          value: fc
            .stringMatching(/^[A-Za-z0-9!#%*+.@^_~-]{2,40}$/) // Values a literal cannot start with: an option's dash, a `%VAR%` reference, a placeholder.
            .filter((v) => /\d/.test(v) && !/^(?:[-.]|%\w*%|your[_-])/.test(v))
        }),
        ({ keyQuote, name, operator, prefix, quote, value }) => {
          const before = `${keyQuote}${prefix}${name}${keyQuote}${operator}${quote}`
          const example = { before: `config ${before}`, secret: value, after: `${quote}\nnext line` }
          assert.isUndefined(markerViolation(all, example))
        }
      ),
      { numRuns: 400 }
    )
  })

  it("verify steps reject what the format rules out: a failed Luhn check, Basic text that does not decode to user:password, a low-entropy token", () => {
    assert.strictEqual(all.redactText("card 4111 1111 1111 1112"), "card 4111 1111 1111 1112")
    assert.strictEqual(all.redactText("card 4111 1111 1111 1111"), "card [REDACTED:payment-card-number]")
    assert.strictEqual(all.redactText("Basic information"), "Basic information")
    assert.strictEqual(all.redactText(`Basic ${btoa("u:p4ss")}`), "Basic [REDACTED:http-basic-credentials]")
    assert.strictEqual(all.redactText("api_key: aaaaaaaaaaaa"), "api_key: aaaaaaaaaaaa")
  })

  it("a rejected candidate does not hide a secret inside its text", () => {
    const token = `ghp_${"a1B2c3D4e5".repeat(3)}xYz123`
    // The XML rule matches first and its value check rejects the reference; the token inside is still found.
    assert.strictEqual(
      all.redactText(`<password>$REF ${token}</password>`),
      "<password>$REF [REDACTED:github-token]</password>"
    )
  })
})

describe("host rules", () => {
  const bad: ReadonlyArray<[string, DefaultRedactor.RedactionRule, string]> = [
    ["does not compile", { name: "broken", pattern: "(unclosed", maxLength: 10 }, "does not compile"],
    ["numbered backreference", { name: "backref", pattern: "(a)\\1", maxLength: 10 }, "numbered backreferences"],
    ["matches the empty string", { name: "empty", pattern: "x*", maxLength: 10 }, "empty string"],
    ["maxLength not positive", { name: "zero", pattern: "x", maxLength: 0 }, "maxLength"],
    ["unsupported flag", { name: "global", pattern: "x", flags: "g", maxLength: 1 }, "flags"]
  ]
  for (const [label, rule, reason] of bad) {
    it(`a rule whose pattern ${label} is refused with InvalidRedactionRule naming the rule`, () => {
      let thrown: unknown
      try {
        DefaultRedactor.make({ rules: [rule] })
      } catch (error) {
        thrown = error
      }
      assert.instanceOf(thrown, DefaultRedactor.InvalidRedactionRule)
      if (!(thrown instanceof DefaultRedactor.InvalidRedactionRule)) return
      assert.strictEqual(thrown.rule, rule.name)
      assert.include(thrown.reason, reason)
      // A host's pattern may name what it protects: the error gives the diagnosis, not the pattern.
      if (rule.pattern.length > 4) assert.notInclude(thrown.message, rule.pattern)
    })
  }

  it.effect("the layer fails with InvalidRedactionRule instead of providing a redactor", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        Effect.service(ArtifactRedactor.ArtifactRedactor).pipe(
          Effect.provide(DefaultRedactor.layer({ rules: [{ name: "broken", pattern: "(", maxLength: 1 }] }))
        )
      )
      assert.isTrue(Exit.isFailure(exit))
      assert.include(String(exit), "InvalidRedactionRule")
    })
  )

  it("host rules and registered secrets extend the defaults; named groups and backreferences by name work combined", () => {
    const redactor = DefaultRedactor.make({
      rules: [
        ...rules,
        {
          name: "ticket-token",
          pattern: String.raw`(?<q>["'])TKT-(?<secret>[0-9]{6})\k<q>`,
          maxLength: 12
        }
      ]
    })
    assert.strictEqual(
      redactor.redactText(`id "TKT-123456" and 'TKT-654321"`),
      `id "TKT-[REDACTED:ticket-token]" and 'TKT-654321"`
    )
  })
})
