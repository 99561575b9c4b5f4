/**
 * The edges of the default rules' shared forms, one rule at a time: what may
 * end an unquoted value, which form a config line's value is checked as, the
 * bounds and prefixes that make a token, and the checks the token rules keep.
 *
 * Each case is also run against the rule with that one piece broken (the
 * fragment dropped, another form, no check): the case must fail there, so
 * it pins the piece it is written for.
 */
import { assert, describe, it } from "@effect/vitest"
import { DefaultRedactor } from "@tessera/artifacts"
import { argumentsBefore, bareEnd, envEnd, lineEnd } from "../src/internal/rulePatterns.js"
import { configLiteral } from "../src/internal/secretChecks.js"

type Rule = DefaultRedactor.RedactionRule

const ruleNamed = (name: string): Rule => {
  const rule = DefaultRedactor.defaultRules.find((candidate) => candidate.name === name)
  if (rule === undefined) throw new Error(`no default rule named ${name}`)
  return rule
}

/** The rule with `from` in its pattern replaced by `to`; refuses a `from` the pattern does not hold. */
const replaced = (rule: Rule, from: string, to: string): Rule => {
  if (!rule.pattern.includes(from)) throw new Error(`${rule.name}: the pattern does not hold ${from}`)
  return { ...rule, pattern: rule.pattern.split(from).join(to) }
}

const unverified = (rule: Rule): Rule => {
  const { verify: _verify, ...rest } = rule
  return rest
}

/** A text with exactly `secret` to replace (`before` and `after` come back byte for byte), or none. */
interface Case {
  readonly text: string
  readonly secret?: string
}

/** Whether the rule alone replaces exactly the case's secret, or leaves a text without one unchanged. */
const holds = (rule: Rule, example: Case): boolean => {
  const output = DefaultRedactor.make({ rules: [rule] }).redactText(example.text)
  if (example.secret === undefined) return output === example.text
  const at = example.text.indexOf(example.secret)
  const expected = `${example.text.slice(0, at)}${DefaultRedactor.replacementFor(rule.name)}${example.text.slice(at + example.secret.length)}`
  return at >= 0 && output === expected
}

interface Edge {
  readonly title: string
  readonly rule: string
  readonly cases: ReadonlyArray<Case>
  /** The rule with the piece the cases are about broken. */
  readonly broken: (rule: Rule) => Rule
}

/** The quoted forms of a config line's value, each with a password that starts with a character YAML reserves. */
const quotedConfigValues: ReadonlyArray<Case> = [
  { text: `DB_PASSWORD="!Sup3r-S3cret"`, secret: "!Sup3r-S3cret" },
  { text: `{"env": "DB_PASSWORD=\\"!Sup3r-S3cret\\"\\n"}`, secret: "!Sup3r-S3cret" },
  { text: `password: "@dm1n-Pr0d"`, secret: "@dm1n-Pr0d" },
  { text: `{"values": "password: \\"@dm1n-Pr0d\\"\\n"}`, secret: "@dm1n-Pr0d" },
  { text: `password = "%h4rd-t0-gu3ss"`, secret: "%h4rd-t0-gu3ss" },
  { text: `{"tfvars": "password = \\"%h4rd-t0-gu3ss\\"\\n"}`, secret: "%h4rd-t0-gu3ss" }
]

// A 45-byte SEC1 EC key (SEQUENCE, INTEGER 1, a 38-byte OCTET STRING): 60 base64 characters, the shortest DER the
// structural check accepts.
const shortestDer = btoa(String.fromCharCode(0x30, 0x2b, 0x02, 0x01, 0x01, 0x04, 0x26, ...Array(38).fill(0x5a)))

// The base64 of a 19-digit ID, a timestamp part and an HMAC part (synthetic).
const discordToken = `${btoa("1234567890123456789").replace(/=+$/, "")}.Gx7Kq2.${"aZ3_k9Qm-T2vX8pL4nR7wY1cF6hJ0sB5dE".slice(0, 34)}`

const edges: ReadonlyArray<Edge> = [
  {
    title: "an unquoted assigned value ends only where a value can (not at a call's parenthesis)",
    rule: "password-assignment",
    cases: [
      { text: "stored_password = sha256(salt + raw).hexdigest()" },
      { text: "db_password = hunter2-Pr0d\n", secret: "hunter2-Pr0d" }
    ],
    broken: (rule) => replaced(rule, bareEnd, "")
  },
  {
    title: "an unquoted .env value ends only where a value can (not at a call's parenthesis)",
    rule: "config-secret-assignment",
    cases: [{ text: `SECRET_KEY=os.getenv("DJANGO_KEY")` }, { text: "SECRET_KEY=Dj4ng0-k3y\n", secret: "Dj4ng0-k3y" }],
    broken: (rule) => replaced(rule, envEnd, "")
  },
  {
    title: "a YAML value ends its line: prose after a colon is not a value",
    rule: "config-secret-assignment",
    cases: [
      { text: "Password: ask the admin" },
      { text: "password: hunter2-Pr0d # rotated monthly", secret: "hunter2-Pr0d" }
    ],
    broken: (rule) => replaced(rule, lineEnd(false), "")
  },
  {
    title: "a YAML value followed by a letter is prose, whatever the letter",
    rule: "config-secret-assignment",
    cases: [{ text: "Password: see the wiki" }, { text: "Secret: kept in the vault" }],
    broken: (rule) => replaced(rule, lineEnd(false), String.raw`(?=[ \t]{0,64}[a-z!])`)
  },
  {
    title: "a YAML line never ends with `;`: `token: Base64;` is a declaration in code",
    rule: "config-secret-assignment",
    cases: [{ text: "interface Credentials {\n  token: Base64;\n}" }, { text: "  secret: Sha256;" }],
    broken: (rule) => replaced(rule, lineEnd(false), lineEnd(true))
  },
  {
    title: "after ` = ` a value may end with `;`, as a statement in code does",
    rule: "config-secret-assignment",
    cases: [
      { text: "password = Hunter2x;", secret: "Hunter2x" },
      { text: "this.password = 'Hunter2x';", secret: "Hunter2x" }
    ],
    broken: (rule) => replaced(rule, lineEnd(true), lineEnd(false))
  },
  {
    title: "a config line's quoted value is checked as quoted, in every form: it may start with `!`, `@` or `%`",
    rule: "config-secret-assignment",
    cases: quotedConfigValues,
    broken: (rule) => ({ ...rule, verify: (value: string) => configLiteral(value, "env") })
  },
  {
    title: "an unquoted .env value is checked as unquoted: `!VAR!` (a batch file's delayed expansion) is not a literal",
    rule: "config-secret-assignment",
    cases: [{ text: "set DB_PASSWORD=!DBPASS!" }, { text: "DB_PASSWORD=@/run/secrets/db" }],
    broken: (rule) => ({ ...rule, verify: (value: string) => configLiteral(value, "quoted") })
  },
  {
    title: "a one-line base64 private key is matched from the shortest length its structural check accepts",
    rule: "private-key-base64",
    cases: [{ text: `key=${shortestDer}\n`, secret: shortestDer }],
    broken: (rule) => replaced(rule, "{59,12000}", "{61,12000}")
  },
  {
    title: "a Discord bot token starts with the base64 of a decimal ID (M, N or O)",
    rule: "discord-bot-token",
    cases: [
      { text: "aB3dE5fG7hI9jK1lM3nO5pQ7r.Xy9Zw1.aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1v" },
      { text: `Bot ${discordToken}`, secret: discordToken }
    ],
    broken: (rule) => replaced(rule, "[MNO](?<=(?<![A-Za-z0-9_-])[MNO])", "(?<=(?<![A-Za-z0-9_-]))")
  },
  {
    title: "a Discord bot token must look generated: a documentation placeholder is not one",
    rule: "discord-bot-token",
    cases: [{ text: "DISCORD_TOKEN: Nxxxxxxxxxxxxxxxxxxxxxxxx.xxxxxx.xxxxxxxxxxxxxxxxxxxxxxxxxxxxx" }],
    broken: unverified
  },
  {
    title: "a Slack token must look generated: a documentation placeholder is not one",
    rule: "slack-token",
    cases: [{ text: "export SLACK_BOT_TOKEN=xoxb-your-bot-token-here" }],
    broken: unverified
  },
  {
    title: "an sk- key must look generated: a kebab-case name is not one",
    rule: "openai-api-key",
    cases: [{ text: "see task-runner docs: sk-this-is-not-a-real-key-just-a-kebab-case-name" }],
    broken: unverified
  },
  {
    title: "secret flags are recognised in any case (`--Password`, `--API-KEY`)",
    rule: "cli-secret-flag",
    cases: [
      { text: "tool login --Password 'S3cr3t-pass'", secret: "S3cr3t-pass" },
      { text: "tool --API-KEY=k3y-Pr0d-9f2", secret: "k3y-Pr0d-9f2" }
    ],
    broken: (rule) => ({ ...rule, flags: "" })
  },
  {
    title: "sshpass's -p is found after other options (`sshpass -v -p ...`)",
    rule: "cli-password-option",
    cases: [{ text: "sshpass -v -p 'S3cr3t-pass' ssh deploy@10.0.0.5", secret: "S3cr3t-pass" }],
    broken: (rule) => replaced(rule, `sshpass${argumentsBefore("-p", 8)}`, `sshpass${argumentsBefore("", 8)}`)
  }
]

describe("default rules: the edges of their shared forms", () => {
  for (const edge of edges) {
    it(`${edge.rule}: ${edge.title}`, () => {
      const rule = ruleNamed(edge.rule)
      for (const example of edge.cases) assert.isTrue(holds(rule, example), JSON.stringify(example))
      // Negative control: with the piece broken, at least one case fails.
      const broken = edge.broken(rule)
      assert.isFalse(
        edge.cases.every((example) => holds(broken, example)),
        "the cases do not tell the broken rule apart"
      )
    })
  }
})
