/**
 * Kinds of secret the default rules once missed, and one family they once
 * flagged, each tested as a class: several forms per kind, a property where
 * there is an input space, and a negative control that runs the same texts
 * through the rules as they were (built from the shipped rules with the fix
 * taken out, `utils/formerRules.ts`) and shows the secret leak or the text
 * change.
 */
import { assert, describe, it } from "@effect/vitest"
import { DefaultRedactor } from "@tessera/artifacts"
import * as fc from "fast-check"
import { leaked } from "../runtime/support/secretCorpus.ts"
import {
  formerBare,
  formerPagination,
  formerRules,
  formerUserInfo,
  type Rule,
  ruleNamed,
  withFormerPattern
} from "./utils/formerRules.ts"
import { markerViolation } from "./utils/markers.ts"
import { derBase64, derOpenings, generator, type Positive } from "./utils/ruleExamples.ts"

const all = DefaultRedactor.make()
const former = (removed: ReadonlyArray<string>, changed: ReadonlyArray<Rule> = []) =>
  DefaultRedactor.make({ rules: formerRules(removed, changed) })

const text = (example: Positive) => `${example.before}${example.secret}${example.after}`
const p = (before: string, secret: string, after = ""): Positive => ({ before, secret, after })

/** Every example's value alone is replaced by the shipped rules, and leaks through `former`. */
const assertFixedClass = (examples: ReadonlyArray<Positive>, before: DefaultRedactor.DefaultRedactor) => {
  for (const example of examples) {
    assert.isUndefined(markerViolation(all, example), JSON.stringify(example))
    assert.isTrue(leaked(before.redactText(text(example)), example.secret), `former rules leak ${text(example)}`)
  }
}

describe("connection strings", () => {
  const examples = [
    p("jdbc:sqlserver://h:1433;user=u;password=", "Xy9-secret-pw", ";encrypt=true"),
    p("jdbc:sqlserver://db.internal:1433;databaseName=app;user=svc;pwd=", "N0t-a-real-pw"),
    p("url=jdbc:sqlserver://10.0.0.4:1433;DatabaseName=hr;User=report;Password=", "Fake!pass42", ";loginTimeout=30"),
    p("Driver={ODBC Driver 18};Server=tcp:h,1433;Uid=app;Pwd={", "fake;pw}}with-brace", "};"),
    p("Server=h;Database=d;User Id=u;Password=", "several fake words", ";Encrypt=True")
  ]

  it("the password after `;password=`, `;pwd=`, `;Password=` and in `Pwd={...}` is replaced exactly, up to the next `;`; negative control: the former user-info check, without the connection-string rule, leaks it", () => {
    assertFixedClass(
      examples,
      former(["connection-string-password"], [formerUserInfo(ruleNamed("password-assignment"))])
    )
  })

  it("property: any JDBC or ADO.NET property list with a password property has exactly its value replaced", () => {
    fc.assert(
      fc.property(
        fc.record({
          head: fc.constantFrom(
            "jdbc:sqlserver://db:1433",
            "jdbc:jtds:sqlserver://legacy/crm",
            "Server=tcp:h,1433",
            "Data Source=ora:1521/ORCL"
          ),
          before: fc.array(fc.constantFrom("user=app", "databaseName=x", "encrypt=true", "Uid=u"), { maxLength: 3 }),
          name: fc.constantFrom("password", "Password", "PWD", "pwd"),
          // No `@`: `db:1433;password=x@y` is a URL's user info as much as a property list.
          value: fc.stringMatching(/^[A-Za-z0-9!*+.^_~-]{1,30}$/).filter((v) => /\d/.test(v) && !/^[-.]/.test(v)),
          after: fc.constantFrom("", ";", ";encrypt=true", ";loginTimeout=30")
        }),
        ({ after, before, head, name, value }) => {
          const example = p(`${[head, ...before].join(";")};${name}=`, value, after)
          assert.isUndefined(markerViolation(all, example))
        }
      ),
      { numRuns: 200 }
    )
  })
})

describe("curl and other -u/--user options", () => {
  const before = former([], [withFormerPattern("cli-user-password")])
  const examples = [
    p('curl -u ":', "Fake-pw-8812", '" https://api.example.com'),
    p("curl --user kevin:'", "fake-pw-0271", "' https://x"),
    p('curl -u "admin:', "fake sentence passwords", '" https://x'),
    p('curl --proxy-user bob:"', "Fake-proxy-77", '" -x http://proxy:3128 https://x'),
    p("curl -s -u ':", "fake-Sq1-pw", "' https://registry.example.com/v2/_catalog")
  ]

  it("the password of `user:password` is replaced with an empty user, the whole argument quoted, or only the password quoted; negative control: the former -u rule leaks it", () => {
    assertFixedClass(examples, before)
  })

  it("`-u user:pw` and `--user=kevin:pw` stay caught, and user:group pairs and references stay untouched", () => {
    assert.isUndefined(markerViolation(all, p("curl -u user:", "Pw-fake-1", " https://x")))
    assert.isUndefined(markerViolation(all, p("curl --user=kevin:", "Pw-fake-2", " https://x")))
    for (const untouched of ["docker run -u 1000:1000 img", 'curl -u "$USER:$PASS" https://x', "ps -u root"]) {
      assert.strictEqual(all.redactText(untouched), untouched)
    }
  })
})

describe("JSON-escaped text", () => {
  it("a .env file in a JSON string: each value ends at the literal \\n, \\r or \\t, and the next assignment keeps its name and gets its own marker", () => {
    const cases: ReadonlyArray<readonly [string, string]> = [
      [
        String.raw`"A=1\nPASSWORD=hunter2\nTOKEN=abc"`,
        String.raw`"A=1\nPASSWORD=[REDACTED:password-assignment]\nTOKEN=[REDACTED:config-secret-assignment]"`
      ],
      [
        String.raw`{"content": "DB_PASSWORD=Fake-9pw\r\nAPI_KEY=Zq81xW0pLk3mQ7\r\nPORT=5432"}`,
        String.raw`{"content": "DB_PASSWORD=[REDACTED:password-assignment]\r\nAPI_KEY=[REDACTED:secret-assignment]\r\nPORT=5432"}`
      ],
      [
        String.raw`{"env": "SECRET=xyz42\tDEBUG=true"}`,
        String.raw`{"env": "SECRET=[REDACTED:config-secret-assignment]\tDEBUG=true"}`
      ],
      [
        String.raw`"{\"env\":\"A=1\\nSECRET=xyz\\nB=2\"}"`,
        String.raw`"{\"env\":\"A=1\\nSECRET=[REDACTED:config-secret-assignment]\\nB=2\"}"`
      ]
    ]
    for (const [input, expected] of cases) assert.strictEqual(all.redactText(input), expected)
  })

  it("negative control: with the former unquoted value, a value runs on across the escape and hides the next assignment's name", () => {
    const before = former(
      ["config-secret-assignment"],
      ["password-assignment", "secret-assignment", "name-value-secret"].map((name) => formerBare(ruleNamed(name)))
    )
    const input = String.raw`"A=1\nPASSWORD=hunter2\nTOKEN=abc\nDEBUG=false"`
    const output = before.redactText(input)
    assert.notInclude(output, "TOKEN=")
    assert.notInclude(output, "DEBUG=false")
    assert.include(all.redactText(input), String.raw`\nTOKEN=[REDACTED:config-secret-assignment]\nDEBUG=false"`)
  })

  it("property: in any .env text held in a JSON string, with any escape between lines, every secret's value is replaced and every other byte is kept", () => {
    const secretLine = fc.record({
      name: fc.constantFrom("PASSWORD", "DB_PASSWORD", "TOKEN", "API_TOKEN", "SECRET", "API_KEY", "CLIENT_SECRET"),
      value: fc.tuple(fc.stringMatching(/^[A-Za-z]{3,6}$/), fc.stringMatching(/^[0-9]{2,4}$/)).map(([a, b]) => a + b),
      secret: fc.constant(true)
    })
    const plainLine = fc.record({
      name: fc.constantFrom("HOST", "PORT", "DEBUG", "REGION", "LOG_LEVEL"),
      value: fc.constantFrom("db.internal", "5432", "false", "eu-west-1", "info"),
      secret: fc.constant(false)
    })
    fc.assert(
      fc.property(
        fc.array(fc.oneof(secretLine, plainLine), { minLength: 1, maxLength: 6 }),
        fc.constantFrom("\\n", "\\r\\n", "\\t", "\\\\n"),
        (lines, separator) => {
          const input = `{"env": "${lines.map((line) => `${line.name}=${line.value}`).join(separator)}"}`
          const output = all.redactText(input)
          const shape = lines
            .map((line) =>
              line.secret
                ? `${escapeRegExp(line.name)}=\\[REDACTED:[a-z0-9-]+\\]`
                : escapeRegExp(`${line.name}=${line.value}`)
            )
            .join(escapeRegExp(separator))
          assert.match(output, new RegExp(`^\\{"env": "${shape}"\\}$`), `${input} -> ${output}`)
        }
      ),
      { numRuns: 300 }
    )
  })
})

const escapeRegExp = (value: string) => value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

describe("pagination and idempotency tokens", () => {
  const formerTokens = DefaultRedactor.make({ rules: formerPagination() })
  const g = generator(0x9a61a7e)
  const opaque = (length: number) => g.chars("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", length)
  const nextToken = btoa('{"NextToken": null, "boto_truncate_amount": 2}')
  const formerlyFlagged = [
    `aws s3api list-objects-v2 --bucket logs --max-items 100 --starting-token ${nextToken}`,
    `aws ec2 describe-instances --next-token ${opaque(120)}`,
    `aws s3api list-objects-v2 --bucket b --continuation-token ${opaque(76)}`,
    `gcloud compute instances list --page-token ${opaque(48)}`,
    `aws dynamodb scan --table-name t --starting-token=${nextToken}`,
    `{"StartingToken": "${opaque(48)}", "PaginationToken": "${opaque(48)}"}`,
    `{"nextForwardToken": "f/${opaque(56)}/s", "nextBackwardToken": "b/${opaque(56)}/s"}`,
    `{"ClientRequestToken": "Console-CreateStack-${opaque(24)}"}`,
    `https://graph.microsoft.com/v1.0/users?$skiptoken=${opaque(60)}`
  ]

  it("CLI pagination flags (space and `=` forms) and pagination fields of cloud CLI output are left alone; negative control: the former token names change every one of them", () => {
    for (const line of formerlyFlagged) {
      assert.strictEqual(all.redactText(line), line)
      assert.notStrictEqual(formerTokens.redactText(line), line, `the former rules flag ${line}`)
    }
    for (const line of [
      `{"NextToken": "${nextToken}"}`,
      `{"nextToken": "${opaque(40)}=="}`,
      `NextToken: ${nextToken}`,
      `aws ssm describe-parameters --next-token=${opaque(80)}`,
      `aws s3api list-objects-v2 --continuation-token=${opaque(60)}`
    ]) {
      assert.strictEqual(all.redactText(line), line)
    }
  })

  it("property: any pagination flag or field with any token, in any form, is left alone, while a --token flag beside it is still caught", () => {
    fc.assert(
      fc.property(
        fc.record({
          form: fc.constantFrom(
            (v: string) => `aws x list --starting-token ${v} --max-items 5`,
            (v: string) => `aws x list --next-token=${v}`,
            (v: string) => `aws s3api list-objects-v2 --continuation-token ${v}`,
            (v: string) => `gcloud x list --page-token=${v}`,
            (v: string) => `tool --next-page-token ${v}`,
            (v: string) => `{"NextToken": "${v}"}`,
            (v: string) => `{"nextToken": "${v}"}`,
            (v: string) => `{"NextContinuationToken": "${v}"}`,
            (v: string) => `{"nextPageToken": "${v}"}`,
            (v: string) => `{"StartingToken": "${v}"}`,
            (v: string) => `NextToken: ${v}`,
            (v: string) => `next_token = "${v}"`
          ),
          value: fc.stringMatching(/^[A-Za-z0-9+/]{8,160}={0,2}$/)
        }),
        ({ form, value }) => {
          const line = form(value)
          assert.strictEqual(all.redactText(line), line)
          assert.notInclude(all.redactText(`${line} --token 9${value}Zz`), `--token 9${value}Zz`)
        }
      ),
      { numRuns: 300 }
    )
  })
})

describe("missed kinds", () => {
  const g = generator(0x6d155ed)
  const fake = () => `Fake${g.chars("abcdefghijklmnopqrstuvwxyz", 5)}${g.chars("0123456789", 3)}!`

  it("mysql and mariadb -p<password> (attached, quoted), sshpass -p, redis-cli -a, registry login -p; negative control: without the CLI password rule they leak", () => {
    assertFixedClass(
      [
        p("mysql -p", fake(), " db"),
        p("mysql -u root -p", fake(), " app"),
        p("mysqldump -h db -P 3306 -uadmin -p'", `${fake()} x`, "' --all-databases"),
        p('mariadb -u app -p"', fake(), '" -e "SHOW DATABASES"'),
        p("sshpass -p '", fake(), "' ssh deploy@10.0.0.5"),
        p("redis-cli -h cache -a ", fake(), " ping"),
        p("docker login -u ci -p ", fake(), " registry.example.com")
      ],
      former(["cli-password-option"])
    )
    assert.isUndefined(markerViolation(all, p("mysql --password=", "Secret", " db")))
    for (const untouched of ["mysql -u root -p db", "mysql -h db -P 3306 -u app", "mysql -p$MYSQL_PWD db"]) {
      assert.strictEqual(all.redactText(untouched), untouched)
    }
  })

  it("an Authorization header with the Api-Token scheme (and SSWS, Negotiate, any scheme) loses its credential, not its scheme; negative control: the former header rule replaced `Api-Token` and leaked the credential", () => {
    const before = former([], [withFormerPattern("authorization-header")])
    const examples = [
      p("Authorization: Api-Token ", "FakeApiToken0123456789abcdefXYZ"),
      p('curl -H "Authorization: Api-Token ', "fAkE9t0k3nVALUE42abc", '" https://x'),
      p("authorization: SSWS ", "00FakeOktaToken9876543210zyxwv"),
      p("Authorization: Negotiate ", "YIIFakeKerberos+Ticket/0123456789abc")
    ]
    assertFixedClass(examples, before)
    assert.include(before.redactText("Authorization: Api-Token FakeApiToken0123456789abcdefXYZ"), "[REDACTED")
  })

  it("Docker auth in config.json, .dockercfg, JSON-escaped and YAML configs, .npmrc `_auth`, and a whole config in base64 under .dockerconfigjson; negative control: the former `auth` rule without the config rule leaks them", () => {
    const auth = btoa("ci:FakeRegistryPassword123")
    const before = former(["docker-config-json"], [withFormerPattern("docker-config-auth")])
    assertFixedClass(
      [
        p(String.raw`{\"auths\":{\"ghcr.io\":{\"auth\":\"`, auth, String.raw`\"}}}`),
        p("auths:\n  registry.example.com:\n    auth: ", auth, "\n"),
        p("//registry.npmjs.org/:_auth=", auth, "\n"),
        p("data:\n  .dockerconfigjson: ", btoa(JSON.stringify({ auths: { "ghcr.io": { auth } } })), "\n"),
        p('{".dockercfg": "', btoa(JSON.stringify({ "https://index.docker.io/v1/": { auth, email: "a@b.c" } })), '"}')
      ],
      before
    )
  })

  const keys = (["rsaPkcs8", "rsaPkcs1", "ecSec1", "ed25519Pkcs8", "encryptedPkcs8", "pkcs12"] as const).map((kind) =>
    derBase64(derOpenings[kind][0], derOpenings[kind][1], g)
  )
  const publicDer = (["rsaSpki", "certificate", "csr"] as const).map((kind) =>
    derBase64(derOpenings[kind][0], derOpenings[kind][1], g)
  )

  it("private keys as bare base64 (PKCS#8, PKCS#1, SEC1, Ed25519, encrypted PKCS#8, PKCS#12) assigned to a name, in JSON or on their own line; negative control: without the base64 key rule they leak", () => {
    const contexts = [
      (k: string) => p("KEY=", k, "\n"),
      (k: string) => p('{"k": "', k, '"}'),
      (k: string) => p("", k, "\n")
    ]
    assertFixedClass(
      keys.flatMap((key) => contexts.map((context) => context(key))),
      former(["private-key-base64"])
    )
  })

  it("property: any DER private key opening with any body is redacted on one line or wrapped; public keys, certificates, requests, images and other base64 are left alone", () => {
    const body = fc.uint8Array({ minLength: 40, maxLength: 600 })
    const b64 = (head: ReadonlyArray<number>, rest: Uint8Array) => btoa(String.fromCharCode(...head, ...rest))
    const hex = (opening: string) => (opening.match(/../g) ?? []).map((byte) => Number.parseInt(byte, 16))
    fc.assert(
      fc.property(
        fc.constantFrom<keyof typeof derOpenings>(
          "rsaPkcs8",
          "rsaPkcs1",
          "ecSec1",
          "ed25519Pkcs8",
          "encryptedPkcs8",
          "pkcs12"
        ),
        body,
        fc.boolean(),
        (kind, rest, wrapped) => {
          const key = b64(hex(derOpenings[kind][0]), rest)
          const shown = wrapped ? (key.match(/.{1,64}/g) ?? []).join("\n") : key
          assert.isUndefined(markerViolation(all, p("private: ", shown, "\n")))
        }
      ),
      { numRuns: 200 }
    )
    fc.assert(
      fc.property(
        fc.constantFrom(
          hex(derOpenings.rsaSpki[0]),
          hex(derOpenings.certificate[0]),
          hex(derOpenings.csr[0]),
          [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a],
          [0x1f, 0x8b, 0x08, 0x00],
          [0x30, 0x82, 0x01, 0x0a, 0x02, 0x82, 0x01, 0x01]
        ),
        body,
        (head, rest) => {
          const line = `data: ${b64(head, rest)}`
          assert.strictEqual(all.redactText(line), line)
        }
      ),
      { numRuns: 200 }
    )
    for (const value of publicDer) assert.strictEqual(all.redactText(`pub: ${value}`), `pub: ${value}`)
  })
})

describe("values under generic names at the start of a line (.env, YAML, HCL, TOML, INI)", () => {
  const genericKeywords = [
    "token",
    "TOKEN",
    "secret",
    "SECRET",
    "credential",
    "credentials",
    "client_secret",
    "api_token",
    "API_KEY",
    "auth_token"
  ]
  const keyword = fc.constantFrom(...genericKeywords, "password")
  // Password names take any literal (`password-assignment`), so the exclusions are checked on the others.
  const genericKeyword = fc.constantFrom(...genericKeywords)
  const prefix = fc.constantFrom("", "GITHUB_", "app.", "db-", "BOT_")
  const indent = fc.constantFrom("", "  ", "    ", "  - ", "export ")
  const form = fc.constantFrom("env", "yaml", "hcl")
  const quote = fc.constantFrom("", '"', "'")
  const assignment = (name: string, f: string, q: string, lead: string) => {
    const operator = f === "env" ? "=" : f === "yaml" ? ": " : " = "
    // `export` opens shell lines only.
    const start = lead === "export " && f !== "env" ? "" : lead
    return { before: `${start}${name}${operator}${q}`, after: q }
  }

  it("negative control: without the line-start rule, short and plain literals under generic names leak", () => {
    const before = former(["config-secret-assignment"])
    const examples = [
      p("auth:\n  token: ", "abc", "\n"),
      p("TOKEN=", "abc", "\n"),
      p('secret = "', "abc", '"\n'),
      p("client_secret: ", "opensesame", "\n"),
      p("export API_TOKEN=", "letmein", "\n")
    ]
    for (const example of examples) {
      assert.isUndefined(markerViolation(all, example), JSON.stringify(example))
      assert.include(before.redactText(text(example)), `${example.before}${example.secret}`)
    }
  })

  it("property: any name ending in a generic keyword, with any prefix, indentation, form and quoting, has exactly its literal value replaced", () => {
    const value = fc
      .tuple(fc.stringMatching(/^[a-z]{2,8}$/), fc.stringMatching(/^[0-9]{1,4}$/), fc.stringMatching(/^[a-z]{0,4}$/))
      .map(([a, b, c]) => `${a}${b}${c}`)
      .filter((v) => !/token|secret|passw|credential/i.test(v))
    fc.assert(
      fc.property(prefix, keyword, indent, form, quote, value, (pre, key, lead, f, q, v) => {
        const { after, before } = assignment(`${pre}${key}`, f, q, lead)
        assert.isUndefined(markerViolation(all, p(`config\n${before}`, v, `${after}\nnext: 1`)))
      }),
      { numRuns: 400 }
    )
  })

  it("property: counters, plural and counting names, settings, references, masks and placeholders under those names are left alone", () => {
    const excluded = fc.constantFrom(
      "5",
      "1234",
      "0.5",
      "true",
      "false",
      "null",
      "off",
      "yes",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell reference, not a template
      "${TOKEN}",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a workflow expression, not a template
      "${{ secrets.TOKEN }}",
      "$API_TOKEN",
      "<token>",
      "***",
      "********",
      "gho_****************************",
      "changeme",
      "aaaaaaaa",
      "my-app-secret",
      "accessToken",
      "|"
    )
    fc.assert(
      fc.property(prefix, genericKeyword, indent, form, quote, excluded, (pre, key, lead, f, q, v) => {
        const { after, before } = assignment(`${pre}${key}`, f, q, lead)
        const line = `${before}${v}${after}`
        assert.strictEqual(all.redactText(line), line)
      }),
      { numRuns: 400 }
    )
    for (const line of [
      "tokens: 1234",
      "max_tokens: 512",
      "token_count: 7",
      "input_tokens: 900",
      "token_limit: 9000"
    ]) {
      assert.strictEqual(all.redactText(line), line)
    }
  })
})
