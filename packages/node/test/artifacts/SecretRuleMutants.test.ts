/**
 * The value checks of the default rules (`verify`), one rule at a time: for
 * each, secrets the rule must catch, replaced exactly, and near misses its
 * pattern matches but its check must leave alone (a reference, a number, an
 * identifier where the form makes it code, a type name, a failed checksum,
 * a flag's specification). Where the same text differs only in how it is
 * written (quoted or bare, `NAME=` or `name: ` or `name = `), both sides are
 * here, so each form's check is pinned. The negative control runs every
 * near miss through the same rule with its check taken out and shows it is
 * changed: each near miss reaches the check, rather than missing the pattern.
 */
import { assert, describe, it } from "@effect/vitest"
import { DefaultRedactor } from "@tessera/artifacts"
import { withLuhn } from "./utils/ruleExamples.ts"

const ruleNamed = (name: string): DefaultRedactor.RedactionRule => {
  const rule = DefaultRedactor.defaultRules.find((candidate) => candidate.name === name)
  if (rule === undefined) return assert.fail(`no default rule ${name}`)
  return rule
}

const alone = (name: string) => DefaultRedactor.make({ rules: [ruleNamed(name)] })

/** The same rule without its value check. */
const unchecked = (name: string) => {
  const { verify: _verify, ...rule } = ruleNamed(name)
  return DefaultRedactor.make({ rules: [rule] })
}

interface Case {
  /** Texts the rule changes, each with the one value that must become the marker. */
  readonly caught: ReadonlyArray<readonly [before: string, secret: string, after: string]>
  /** Texts the pattern matches and the check refuses: left as they are. */
  readonly nearMisses: ReadonlyArray<string>
}

const card19 = withLuhn("411111111111111111")
const card13 = withLuhn("422222222222")

const cases: Readonly<Record<string, Case>> = {
  "payment-card-number": {
    caught: [
      ["card ", "4111 1111 1111 1111", " on file"],
      ["card ", "4111-1111-1111-1111", ""],
      ["card ", "4111111111111111", "."],
      ["visa13 ", card13, ""],
      ["long ", card19, ""]
    ],
    nearMisses: [
      "card 4111 1111 1111 1112",
      "card 4111-1111-1111-1112",
      "visa13 4222222222223",
      `long ${card19.slice(0, -1)}${(Number(card19.at(-1)) + 1) % 10}`
    ]
  },
  "cli-user-password": {
    caught: [
      ["curl -u admin:", "s3cr3tPw", " https://x.example"],
      ["curl -u admin:", "pw123", " https://x.example"],
      ["curl -u admin:", "123abc", " https://x.example"],
      // A bare word is a password here: the argument is a literal, not code.
      ["curl -u admin:", "plainword", " https://x.example"],
      ['curl --user "admin:', "two words 9", '"']
    ],
    nearMisses: [
      "docker run -u 1000:1000 image",
      "curl -u admin:7 https://x.example",
      "curl -u admin:$PASSWORD https://x.example",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell reference, not a template
      "curl -u admin:${PASSWORD} https://x.example"
    ]
  },
  "cli-password-option": {
    caught: [
      ["mysql -u root -p", "S3cretPw", " app"],
      ["mysql -u root -p", "plainword", " app"],
      ["redis-cli -a ", "0x1F2E", " ping"],
      ["sshpass -p ", "Hunter2pw", " ssh host"],
      ["docker login -u me -p ", "Tok3nValue", " registry.example"]
    ],
    nearMisses: [
      "mysql -u root -p$MYSQL_PWD app",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell reference, not a template
      "sshpass -p ${SSHPASS} ssh host",
      "docker login -u me -p *** registry.example"
    ]
  },
  "cli-secret-flag": {
    caught: [
      ["tool --password ", "hunter2x", " --verbose"],
      ["tool --api-key=", "k3y-value", ""],
      ["tool --token ", "abc123==", ""],
      ["tool --secret ", "plainword", ""]
    ],
    nearMisses: [
      "tool --password $PW --verbose",
      "docker build --secret id=npmrc,src=.npmrc .",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell reference, not a template
      "tool --api-key=${API_KEY}",
      "tool --token ****"
    ]
  },
  "connection-string-password": {
    caught: [
      ["Server=h;User Id=u;Password=", "Fake!pass42", ";Encrypt=True"],
      // Bare, an identifier is still a literal in a connection string: only references and masks are not.
      ["Server=h;Pwd=", "dbpassword", ";"],
      ["Driver={x};Pwd={", "br4ced", "};"]
    ],
    nearMisses: ["Server=h;Password=$DB_PASSWORD;", "Server=h;Pwd={$DB_PW};", "Server=h;Password=********;"]
  },
  "xml-secret-element": {
    caught: [
      ["<password>", "hunter2", "</password>"],
      ["<db:secret>", "dbpassword", "</db:secret>"]
    ],
    nearMisses: [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a configuration reference, not a template
      "<password>${PW}</password>",
      "<apiKey>$API_KEY</apiKey>",
      "<token>********</token>"
    ]
  },
  "name-value-secret": {
    caught: [
      ["- name: DB_PASSWORD\n  value: ", "s3cret-pw", ""],
      ['- name: API_TOKEN\n  value: "', "dbPassword", '"']
    ],
    nearMisses: ["- name: DB_PASSWORD\n  value: dbPassword", "- name: DB_PASSWORD\n  value: $DB_PASSWORD"]
  },
  "password-assignment": {
    caught: [
      ['db.password = "', "userpassword", '"'],
      ["db.password = ", "us3r-pw!", ";"],
      ['{\\"password\\": \\"', "userpassword", '\\"}']
    ],
    nearMisses: [
      "db.password = user.password;",
      'db.password = "$DB_PASSWORD"',
      "db.password = 0x0B96;",
      "password = ~/pw.txt"
    ]
  },
  "secret-assignment": {
    caught: [
      ['api_key = "', "aB3dE5gH7jK9", '"'],
      ["api_key = ", "aB3dE5gH7jK9", ";"],
      ['private_key: "', "Uint8Array", '"'],
      ['client_secret = "', "xQz_PwLm.KvJrT", '"']
    ],
    nearMisses: [
      'api_key = "aaaaaaaaaaaa"',
      'api_key = "$Ab3dEf9hIj"',
      "private_key: Uint8Array",
      "client_secret = xQz_PwLm.KvJrT;"
    ]
  },
  "config-secret-assignment": {
    caught: [
      // .env: a bare word is a literal, a type name too.
      ["SECRET=", "someValue", ""],
      ["SECRET=", "SomeType", ""],
      // Quoted: a type name, an identifier and a YAML indicator are literals.
      ['secret: "', "SomeType", '"'],
      ['secret = "', "someValue", '"'],
      ['secret: "', "&anchor1", '"']
    ],
    nearMisses: ["secret = someValue", "secret: SomeType", "secret: &anchor1", "SECRET=$SECRET", "secret: false"]
  }
}

/** A default rule's check on a host's own, wider pattern (`RedactionRule.verify` is public, and so is each rule). */
const reused = (name: string, pattern: string) =>
  DefaultRedactor.make({ rules: [{ ...ruleNamed(name), pattern, flags: "" }] })

describe("default rules' value checks", () => {
  for (const [name, { caught, nearMisses }] of Object.entries(cases)) {
    it(`${name}: catches each secret, replacing exactly its value, and leaves each near miss as it is`, () => {
      const redactor = alone(name)
      const marker = DefaultRedactor.replacementFor(name)
      for (const [before, secret, after] of caught) {
        assert.strictEqual(redactor.redactText(`${before}${secret}${after}`), `${before}${marker}${after}`, secret)
      }
      for (const text of nearMisses) assert.strictEqual(redactor.redactText(text), text)
    })
  }

  it("negative control: every near miss above is changed by its rule with the value check taken out, so each is refused by the check and not by the pattern", () => {
    for (const [name, { nearMisses }] of Object.entries(cases)) {
      const redactor = unchecked(name)
      for (const text of nearMisses) assert.notStrictEqual(redactor.redactText(text), text, `${name}: ${text}`)
    }
  })

  it("card_check_reused: the card check itself admits 13 to 19 digits passing Luhn, whatever pattern hands it the number", () => {
    const wide = reused("payment-card-number", String.raw`\b[0-9]{8,30}\b`)
    const marker = DefaultRedactor.replacementFor("payment-card-number")
    for (const digits of [card13, "4111111111111111", card19])
      assert.strictEqual(wide.redactText(`n ${digits}`), `n ${marker}`)
    for (const digits of [
      withLuhn("41111111111"),
      withLuhn("4111111111111111111"),
      withLuhn("41111111111111111111111")
    ]) {
      assert.strictEqual(wide.redactText(`n ${digits}`), `n ${digits}`, `${digits.length} digits`)
    }
    // Negative control: the same wide pattern with the check taken out takes every run of digits.
    const { verify: _verify, ...unverified } = ruleNamed("payment-card-number")
    const loose = DefaultRedactor.make({ rules: [{ ...unverified, pattern: String.raw`\b[0-9]{8,30}\b`, flags: "" }] })
    assert.strictEqual(loose.redactText(`n ${withLuhn("41111111111")}`), `n ${marker}`)
  })

  it("config_check_reused: the line-start check, handed a value by a pattern with no named group, judges it as a quoted value", () => {
    const marker = DefaultRedactor.replacementFor("config-secret-assignment")
    // Quoted, a YAML indicator is part of the value; unquoted YAML would read it as an anchor.
    const bare = reused("config-secret-assignment", "&anchor[0-9]")
    assert.strictEqual(bare.redactText("x &anchor1 y"), `x ${marker} y`)
    assert.strictEqual(alone("config-secret-assignment").redactText("secret: &anchor1"), "secret: &anchor1")
  })

  it("all_rules_agree: with every default rule together, each caught secret is still replaced", () => {
    const all = DefaultRedactor.make()
    for (const { caught } of Object.values(cases)) {
      for (const [before, secret, after] of caught)
        assert.notInclude(all.redactText(`${before}${secret}${after}`), secret)
    }
  })
})
