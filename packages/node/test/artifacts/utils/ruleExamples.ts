/**
 * True-positive and true-negative examples for every default rule.
 *
 * Values are generated from each vendor's documented shape (prefix, length,
 * charset) by a seeded generator, so the examples are the same on every run
 * and no literal credential sits in the repository.
 */

/** A small seeded generator (mulberry32), so examples are stable across runs. */
export const generator = (seed: number) => {
  let state = seed >>> 0
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(next() * items.length)] as A
  const chars = (charset: string, length: number): string =>
    Array.from({ length }, () => charset[Math.floor(next() * charset.length)]).join("")
  return { next, pick, chars }
}

export const HEX = "0123456789abcdef"
export const DIGITS = "0123456789"
export const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
export const LOWER = "abcdefghijklmnopqrstuvwxyz"
export const ALNUM = `${UPPER}${LOWER}${DIGITS}`
export const URLSAFE = `${ALNUM}_-`
export const BASE64 = `${ALNUM}+/`
export const BASE32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"

/** Appends a Luhn check digit to `digits`. */
export const withLuhn = (digits: string): string => {
  for (let check = 0; check <= 9; check++) {
    const candidate = `${digits}${check}`
    let sum = 0
    for (let index = 0; index < candidate.length; index++) {
      let digit = Number(candidate[candidate.length - 1 - index])
      if (index % 2 === 1) {
        digit *= 2
        if (digit > 9) digit -= 9
      }
      sum += digit
    }
    if (sum % 10 === 0) return candidate
  }
  throw new Error("unreachable: one check digit always fits")
}

/** A text in which exactly `secret` must be replaced, and nothing else. */
export interface Positive {
  readonly before: string
  readonly secret: string
  readonly after: string
}

export interface RuleExamples {
  readonly positives: ReadonlyArray<Positive>
  /** Texts the rule must leave unchanged. */
  readonly negatives: ReadonlyArray<string>
}

const g = generator(0x5ec12e75)
const { chars } = g
const p = (before: string, secret: string, after = ""): Positive => ({ before, secret, after })

const pemBody = (lines: number) => Array.from({ length: lines }, () => chars(BASE64, 64)).join("\n")
const pem = (label: string) => `-----BEGIN ${label}-----\n${pemBody(4)}\n${chars(BASE64, 20)}==\n-----END ${label}-----`
const jwtPart = (json: string) => btoa(json).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_")
const jwt = () =>
  `${jwtPart('{"alg":"HS256","typ":"JWT"}')}.${jwtPart(`{"sub":"${chars(DIGITS, 10)}","name":"Ada"}`)}.${chars(URLSAFE, 43)}`
const password = () =>
  `${g.pick(["Tr0ub4dor", "hunter", "Sommer", "blue-Moon", "qwerty"])}${chars(DIGITS, 3)}!${chars(ALNUM, 4)}`

/** The examples of the first rules, before the kinds and forms below were added. */
const firstExamples: Readonly<Record<string, RuleExamples>> = {
  "private-key-block": {
    positives: [
      p("key:\n", pem("RSA PRIVATE KEY"), "\nend"),
      p("", pem("OPENSSH PRIVATE KEY"), "\n"),
      p('{"private_key": "', pem("PRIVATE KEY").replaceAll("\n", "\\n"), '", "client_email": "x@y.iam"}')
    ],
    negatives: [
      `-----BEGIN PUBLIC KEY-----\n${pemBody(2)}\n-----END PUBLIC KEY-----`,
      "the PRIVATE KEY header is BEGIN"
    ]
  },
  "pgp-private-key-block": {
    positives: [
      p(
        "",
        `-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF${chars(BASE64, 58)}\n${pemBody(3)}\n=${chars(BASE64, 4)}\n-----END PGP PRIVATE KEY BLOCK-----`,
        "\n"
      )
    ],
    negatives: [`-----BEGIN PGP PUBLIC KEY BLOCK-----\n${pemBody(2)}\n-----END PGP PUBLIC KEY BLOCK-----`]
  },
  "putty-private-key": {
    positives: [
      p(
        "PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1\n",
        `${chars(BASE64, 44)}`,
        `\nPrivate-MAC: ${chars(HEX, 64)}\n`
      )
    ],
    negatives: ["Private-Lines: 2\nnot a key\nPrivate-MAC: none"]
  },
  "age-secret-key": {
    positives: [p("# created: 2024\n", `AGE-SECRET-KEY-1${chars(BASE32, 58)}`, "\n")],
    negatives: ["AGE-SECRET-KEY-1 is the prefix of age identities", `age1${chars(BASE32.toLowerCase(), 58)}`]
  },
  "aws-access-key-id": {
    positives: [p("key id ", `AKIA${chars(`${UPPER}234567`, 16)}`, " in use"), p("ASIA: ", `ASIA${chars(UPPER, 16)}`)],
    negatives: [`AKIA${chars(UPPER, 10)} is too short`, `XAKIA${chars(UPPER, 16)}`]
  },
  "aws-secret-access-key": {
    positives: [
      p("aws_secret_access_key = ", chars(BASE64, 40), "\n"),
      p('"AWS_SESSION_TOKEN": "', `IQoJb3JpZ2luX2Vj${chars(BASE64, 200)}`, '"')
    ],
    negatives: ["aws_secret_access_key = <your key here>", "the aws secret key must be rotated"]
  },
  "google-api-key": {
    positives: [p("key=", `AIza${chars(URLSAFE, 35)}`, "&q=x")],
    negatives: ["AIza is the prefix", `AIza${chars(URLSAFE, 20)} too short`]
  },
  "google-oauth-client-secret": {
    positives: [p('"client_secret":"', `GOCSPX-${chars(URLSAFE, 28)}`, '"')],
    negatives: ["GOCSPX- alone"]
  },
  "google-oauth-access-token": {
    positives: [p("token ", `ya29.${chars(URLSAFE, 150)}`, " expires")],
    negatives: ["ya29.short"]
  },
  "google-oauth-refresh-token": {
    positives: [p("refresh: ", `1//0${chars(URLSAFE, 100)}`)],
    negatives: ["http://0example.com and 1//0 alone"]
  },
  "firebase-cloud-messaging-key": {
    positives: [p("key=", `AAAA${chars(URLSAFE, 7)}:APA91b${chars(URLSAFE, 134)}`)],
    negatives: ["AAAA record: APA91b"]
  },
  "azure-storage-account-key": {
    positives: [
      p(
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=",
        `${chars(BASE64, 86)}==`,
        ";EndpointSuffix=core.windows.net"
      )
    ],
    negatives: ["AccountKey=<key>;", "AccountName=acct"]
  },
  "azure-sas-signature": {
    positives: [
      p("https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2025&sr=b&sp=r&sig=", `${chars(ALNUM, 43)}%3D`)
    ],
    negatives: ["?sig=short&x=1"]
  },
  "azure-ad-client-secret": {
    positives: [p("secret: ", `${chars(ALNUM, 3)}8Q~${chars(`${ALNUM}_~.-`, 34)}`)],
    negatives: ["8Q~ alone", `abc8Q~${chars(ALNUM, 10)}`]
  },
  "digitalocean-token": {
    positives: [p("DO ", `dop_v1_${chars(HEX, 64)}`)],
    negatives: [`dop_v1_${chars(HEX, 20)}`]
  },
  "alibaba-access-key-id": {
    positives: [p("id ", `LTAI${chars(ALNUM, 20)}`)],
    negatives: ["LTAI short", `LTAI${chars(ALNUM, 30)}`]
  },
  "heroku-api-key": {
    positives: [p("HEROKU ", `HRKU-AA${chars(URLSAFE, 58)}`)],
    negatives: ["HRKU- prefix only"]
  },
  "github-token": {
    positives: [p("GH ", `ghp_${chars(ALNUM, 36)}`, " end"), p("", `ghs_${chars(ALNUM, 36)}`)],
    negatives: [`ghp_${chars(ALNUM, 20)} short`, "the ghp_ prefix"]
  },
  "github-fine-grained-token": {
    positives: [p("token ", `github_pat_11${chars(`${UPPER}${DIGITS}`, 20)}_${chars(ALNUM, 59)}`, "!")],
    negatives: ["github_pat_ prefix", "github_pat_short"]
  },
  "gitlab-personal-token": {
    positives: [p("use ", `glpat-${chars(URLSAFE, 20)}`, " now")],
    negatives: ["glpat-short"]
  },
  "gitlab-ci-token": {
    positives: [p("runner ", `glrt-${chars(URLSAFE, 20)}`), p("deploy ", `gldt-${chars(URLSAFE, 20)}`)],
    negatives: ["glrt-short", "gldt-"]
  },
  "bitbucket-app-password": {
    positives: [p("pw ", `ATBB${chars(ALNUM, 32)}`)],
    negatives: ["ATBB short"]
  },
  "atlassian-api-token": {
    positives: [p("jira ", `ATATT3xFfGF0${chars(URLSAFE, 170)}=${chars(HEX.toUpperCase(), 8)}`)],
    negatives: ["ATATT3 short"]
  },
  "circleci-token": {
    positives: [p("circle ", `CCIPAT_${chars(ALNUM, 22)}_${chars(HEX, 40)}`)],
    negatives: ["CCIPAT_ alone"]
  },
  "buildkite-token": { positives: [p("bk ", `bkua_${chars(HEX, 40)}`)], negatives: [`bkua_${chars(HEX, 12)}`] },
  "npm-token": {
    positives: [p("//registry.npmjs.org/:_authToken=", `npm_${chars(ALNUM, 36)}`, "\n")],
    negatives: ["npm_config_cache=/tmp", `npm_${chars(ALNUM, 40)}`]
  },
  "pypi-token": {
    positives: [p("password = ", `pypi-AgEIcHlwaS5vcmc${chars(URLSAFE, 120)}`)],
    negatives: ["pypi-AgEIcHlwaS5vcmc"]
  },
  "rubygems-api-key": { positives: [p("", `rubygems_${chars(HEX, 48)}`)], negatives: ["rubygems_version 3"] },
  "nuget-api-key": { positives: [p("-k ", `oy2${chars(`${LOWER}${DIGITS}`, 43)}`)], negatives: ["oy2 short"] },
  "docker-hub-token": { positives: [p("login -p ", `dckr_pat_${chars(URLSAFE, 27)}`)], negatives: ["dckr_pat_x"] },
  "terraform-cloud-token": {
    positives: [p('token = "', `${chars(ALNUM, 14)}.atlasv1.${chars(URLSAFE, 67)}`, '"')],
    negatives: ["app.atlasv1.short"]
  },
  "vault-token": { positives: [p("VAULT ", `hvs.${chars(URLSAFE, 90)}`)], negatives: ["hvs.short", "hvs.config"] },
  "pulumi-token": { positives: [p("", `pul-${chars(HEX, 40)}`)], negatives: ["pul-request"] },
  "doppler-token": { positives: [p("", `dp.st.${chars(ALNUM, 43)}`)], negatives: ["dp.st.short"] },
  "sentry-token": {
    positives: [p("auth ", `sntrys_eyJ${chars(BASE64, 120)}_${chars(ALNUM, 43)}`), p("", `sntryu_${chars(HEX, 64)}`)],
    negatives: ["sntrys_ prefix"]
  },
  "grafana-token": {
    positives: [p("", `glsa_${chars(ALNUM, 32)}_${chars(HEX, 8)}`), p("", `glc_eyJ${chars(BASE64, 100)}`)],
    negatives: ["glsa_short"]
  },
  "new-relic-key": {
    positives: [p("", `NRAK-${chars(`${UPPER}${DIGITS}`, 27)}`)],
    negatives: ["NRAK-SHORT"]
  },
  "databricks-token": { positives: [p("", `dapi${chars(HEX, 32)}`)], negatives: ["dapi is an abbreviation"] },
  "linear-api-key": { positives: [p("", `lin_api_${chars(ALNUM, 40)}`)], negatives: ["lin_api_short"] },
  "postman-api-key": {
    positives: [p("", `PMAK-${chars(HEX, 24)}-${chars(HEX, 34)}`)],
    negatives: ["PMAK-short"]
  },
  "figma-token": { positives: [p("", `figd_${chars(URLSAFE, 40)}`)], negatives: ["figd_short"] },
  "notion-token": {
    positives: [p("", `ntn_${chars(DIGITS, 11)}${chars(ALNUM, 35)}`), p("", `secret_${chars(ALNUM, 43)}`)],
    negatives: ["secret_sauce", "ntn_short"]
  },
  "airtable-token": {
    positives: [p("", `pat${chars(ALNUM, 14)}.${chars(HEX, 64)}`)],
    negatives: ["pattern.matches()"]
  },
  "supabase-token": { positives: [p("", `sbp_${chars(HEX, 40)}`)], negatives: ["sbp_short"] },
  "planetscale-token": {
    positives: [p("", `pscale_pw_${chars(URLSAFE, 43)}`)],
    negatives: ["pscale_pw_short"]
  },
  "one-password-service-token": {
    positives: [p("OP_SERVICE_ACCOUNT ", `ops_eyJ${chars(BASE64.replace("+", "").replace("/", ""), 300)}`)],
    negatives: ["ops_eyJ short"]
  },
  "slack-token": {
    positives: [
      p("bot ", `xoxb-${chars(DIGITS, 12)}-${chars(DIGITS, 13)}-${chars(ALNUM, 24)}`),
      p("app ", `xapp-1-A${chars(UPPER, 10)}-${chars(DIGITS, 13)}-${chars(HEX, 64)}`)
    ],
    negatives: ["xoxb- prefix", "xoxo-hugs-and-kisses-forever"]
  },
  "slack-webhook": {
    positives: [
      p("https://hooks.slack.com/", `services/T${chars(UPPER, 8)}/B${chars(UPPER, 10)}/${chars(ALNUM, 24)}`, " posted")
    ],
    negatives: ["https://hooks.slack.com/ is the host", "https://hooks.slack.com/services/short"]
  },
  "discord-webhook": {
    positives: [p(`https://discord.com/api/webhooks/${chars(DIGITS, 19)}/`, chars(URLSAFE, 68))],
    negatives: ["https://discord.com/api/webhooks/123/short"]
  },
  "discord-bot-token": {
    positives: [p("Bot ", `M${chars(ALNUM, 25)}.${chars(URLSAFE, 6)}.${chars(URLSAFE, 38)}`)],
    negatives: ["Mozilla.Firefox.Release"]
  },
  "telegram-bot-token": {
    positives: [p("https://api.telegram.org/bot", `${chars(DIGITS, 10)}:AA${chars(URLSAFE, 33)}`, "/getMe")],
    negatives: ["12345678:AAshort"]
  },
  "teams-webhook": {
    positives: [
      p(
        "https://contoso.webhook.office.com/",
        `webhookb2/${chars(HEX, 8)}-${chars(HEX, 4)}@${chars(HEX, 8)}/IncomingWebhook/${chars(HEX, 32)}/${chars(HEX, 8)}`
      )
    ],
    negatives: ["https://contoso.webhook.office.com/webhookb2/short"]
  },
  "twilio-api-key": { positives: [p("sid ", `SK${chars(HEX, 32)}`)], negatives: ["SKU12345", `SK${chars(HEX, 20)}`] },
  "sendgrid-api-key": {
    positives: [p("", `SG.${chars(URLSAFE, 22)}.${chars(URLSAFE, 43)}`)],
    negatives: ["SG.short.x"]
  },
  "mailgun-api-key": { positives: [p("api:", `key-${chars(HEX, 32)}`)], negatives: ["key-value store"] },
  "mailchimp-api-key": { positives: [p("", `${chars(HEX, 32)}-us${chars(DIGITS, 2)}`)], negatives: ["abc-us1"] },
  "brevo-api-key": {
    positives: [p("", `xkeysib-${chars(HEX, 64)}-${chars(ALNUM, 16)}`)],
    negatives: ["xkeysib-short"]
  },
  "stripe-secret-key": {
    positives: [p("", `sk_live_${chars(ALNUM, 99)}`), p("", `rk_test_${chars(ALNUM, 24)}`)],
    negatives: [`pk_live_${chars(ALNUM, 24)}`, "sk_live_"]
  },
  "stripe-webhook-secret": { positives: [p("", `whsec_${chars(ALNUM, 32)}`)], negatives: ["whsec_short"] },
  "square-token": {
    positives: [p("", `EAAA${chars(URLSAFE, 60)}`), p("", `sq0csp-${chars(URLSAFE, 43)}`)],
    negatives: ["sq0atp-short"]
  },
  "braintree-access-token": {
    positives: [p("", `access_token$production$${chars(`${LOWER}${DIGITS}`, 16)}$${chars(HEX, 32)}`)],
    negatives: ["access_token$production$"]
  },
  "shopify-token": { positives: [p("", `shpat_${chars(HEX, 32)}`)], negatives: ["shpat_short"] },
  "flutterwave-secret-key": {
    positives: [p("", `FLWSECK_TEST-${chars(HEX, 32)}-X`)],
    negatives: ["FLWSECK-short-X"]
  },
  "payment-card-number": {
    positives: [
      p("card ", withLuhn(`4${chars(DIGITS, 14)}`), " charged"),
      p("", withLuhn(`5${g.pick(["1", "2", "3", "4", "5"])}${chars(DIGITS, 13)}`).replace(/(\d{4})(?=\d)/g, "$1 "))
    ],
    negatives: ["order 4111111111111112 (fails Luhn)", "version 4.1.1111.1111", "ts 1733011200000"]
  },
  "anthropic-api-key": {
    positives: [p("x-api-key: ", `sk-ant-api03-${chars(URLSAFE, 93)}AA`)],
    negatives: ["sk-ant-api03-short"]
  },
  "openai-api-key": {
    positives: [
      p("", `sk-proj-${chars(URLSAFE, 156)}`),
      p("", `sk-${chars(ALNUM, 20)}T3BlbkFJ${chars(ALNUM, 20)}`),
      p("", `sk-${chars(HEX, 32)}`)
    ],
    negatives: ["sk-learn is a library", "task-runner-for-the-whole-monorepo-and-more-stuff"]
  },
  "openrouter-api-key": { positives: [p("", `sk-or-v1-${chars(HEX, 64)}`)], negatives: ["sk-or-v1-short"] },
  "groq-api-key": { positives: [p("", `gsk_${chars(ALNUM, 52)}`)], negatives: ["gsk_short"] },
  "huggingface-token": {
    positives: [p("HF ", `hf_${chars(`${UPPER}${LOWER}`, 34)}`)],
    negatives: ["hf_hub_download(repo_id)"]
  },
  "replicate-token": { positives: [p("", `r8_${chars(ALNUM, 37)}`)], negatives: ["r8_short"] },
  "perplexity-api-key": { positives: [p("", `pplx-${chars(ALNUM, 48)}`)], negatives: ["pplx-short"] },
  "xai-api-key": { positives: [p("", `xai-${chars(ALNUM, 80)}`)], negatives: ["xai-short"] },
  "mapbox-secret-token": {
    positives: [p("", `sk.eyJ1Ijoi${chars(URLSAFE, 60)}.${chars(URLSAFE, 22)}`)],
    negatives: ["sk.eyJ short"]
  },
  "facebook-access-token": { positives: [p("", `EAAB${chars(ALNUM, 180)}`)], negatives: ["EAAB short"] },
  "twitter-bearer-token": {
    positives: [p("", `AAAAAAAAAAAAAAAAAAAAA${chars(ALNUM, 20)}%3D${chars(ALNUM, 50)}`)],
    negatives: ["AAAAAAAAAAAAAAAAAAAAA"]
  },
  "dropbox-token": { positives: [p("", `sl.${chars(URLSAFE, 138)}`)], negatives: ["sl.short"] },
  "shippo-token": { positives: [p("", `shippo_live_${chars(HEX, 40)}`)], negatives: ["shippo_live_short"] },
  jwt: {
    positives: [p("session ", jwt(), " ok")],
    negatives: ["eyJ alone", "header.eyJpayload."]
  },
  "url-credentials": {
    positives: [
      p("dsn postgres://admin:", `S3cr3t-${chars(ALNUM, 8)}`, "@db.internal:5432/app"),
      p("git clone https://x-access-token:", chars(ALNUM, 40), "@github.com/o/r.git"),
      p("mongodb+srv://app:", `p@ss-${chars(ALNUM, 6)}`, "@cluster0.example.net/db")
    ],
    negatives: ["ssh://git@github.com/o/r.git", "https://example.com:8443/path"]
  },
  "http-basic-credentials": {
    positives: [
      p("Authorization: Basic ", btoa(`admin:${chars(ALNUM, 12)}`), "\n"),
      p('-H "authorization: basic ', btoa(`svc:${chars(ALNUM, 9)}`), '"')
    ],
    negatives: ["Basic information about the service", "Basic dGhpcyBpcyBub3QgY3JlZHM="]
  },
  "docker-config-auth": {
    positives: [p('{"auths":{"ghcr.io":{"auth":"', btoa(`user:${chars(ALNUM, 20)}`), '"}}}')],
    negatives: ['{"auth":"bm90LWNyZWRz"}']
  },
  "cli-user-password": {
    positives: [
      p("curl -u admin:", `S3cret${chars(ALNUM, 6)}`, " https://api.example.com"),
      p("wget --user=bob:", chars(ALNUM, 10), " x")
    ],
    negatives: ["docker run -u 1000:1000 image", 'curl -u "$USER:$PASS" https://x']
  },
  "bearer-token": {
    positives: [p("Authorization: Bearer ", `${chars(ALNUM, 30)}.${chars(URLSAFE, 10)}`, "\n")],
    negatives: [
      "The bearer instruments of value",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell reference, not a template
      "Authorization: Bearer ${TOKEN}"
    ]
  },
  "authorization-header": {
    positives: [p("Authorization: token ", chars(HEX, 40)), p('"Authorization": "', `${chars(ALNUM, 24)}`, '"')],
    negatives: ["Authorization: AWS4-HMAC-SHA256 Credential=x", "authorization: required"]
  },
  "netrc-password": {
    positives: [p("machine api.example.com\n  login bob\n  password ", `${chars(ALNUM, 12)}`, "\n")],
    negatives: ["machine learning login page password reset"]
  },
  "cli-secret-flag": {
    positives: [p("mysqladmin --password ", password(), " status"), p("gh --api-key ", chars(ALNUM, 24))],
    negatives: ["tool --password-file /run/secrets/pw", "tool --token $TOKEN"]
  },
  "xml-secret-element": {
    positives: [p("<user><password>", password(), "</password></user>")],
    negatives: ["<password></password>", "<passwordPolicy>strict</passwordPolicy>"]
  },
  "name-value-secret": {
    positives: [
      p('env:\n  - name: REDIS_PASSWORD\n    value: "', password(), '"\n'),
      p('[{"name": "GITHUB_TOKEN",\n  "value": "', chars(ALNUM, 30), '"}]')
    ],
    negatives: [
      "  - name: REDIS_PASSWORD\n    valueFrom:\n      secretKeyRef: {name: redis}",
      "  - name: TOKEN_TTL\n    value: 3600"
    ]
  },
  "password-assignment": {
    positives: [
      p("DB_PASSWORD=", password(), "\n"),
      p("MYSQL_ROOT_PASSWORD: ", password()),
      p('PASSWORD := "', "hunter2", '"'),
      p('"password" => "', `${password()} with spaces`, '",'),
      p('{"password": "', password(), '"}'),
      p('password=\\"', password(), '\\"'),
      p("PASSWORD ?= ", password()),
      p("jdbc:mysql://db/app?user=app&password=", password(), "&ssl=true"),
      p("Server=db;User Id=app;Password=", password(), ";"),
      // Unquoted and shaped like a member path, but a digit makes it a literal (found by the quoting property).
      p("'app.PASSWORD' = ", "k._5", "\n"),
      p("MYSQL_ROOT_Passwd = ", "_r._7", "\n")
    ],
    negatives: [
      "password: str",
      "self.password = password",
      "password = request.form.password",
      "PASSWORD_MIN_LENGTH=12",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell or workflow reference, not a template
      "password: ${DB_PASSWORD}",
      'password = ""',
      "if password == 'x':",
      "bypass=true",
      "PWD=/home/user"
    ]
  },
  "secret-assignment": {
    positives: [
      p("OPENAI_API_KEY=", `${chars(ALNUM, 40)}`, "\n"),
      p('SECRET_KEY = "', `django-insecure-${chars(ALNUM, 30)}`, '"'),
      p("client_secret: ", `${chars(ALNUM, 32)}`),
      p('"access_token": "', `${chars(URLSAFE, 40)}`, '"'),
      p("X-Api-Key: ", `${chars(HEX, 32)}`)
    ],
    negatives: [
      "max_tokens: 4096",
      'eos_token = "</s>"',
      "token = tokens[i]",
      "secret: my-app-secret",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell or workflow reference, not a template
      "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
      "secretName: db-credentials",
      "token_type: bearer"
    ]
  }
}

// ---------------------------------------------------------------------------
// Examples added with the rules for connection strings, CLI passwords, JSON-escaped text, pagination tokens,
// bare base64 keys, Docker configs and line-start config assignments. They draw from their own generator, so
// the values above stay what they were.

const h = generator(0x35c1a55e)

/** Bytes from `h`, base64-encoded after `opening` (hex), to `total` bytes: a DER structure's look, not a real key. */
export const derBase64 = (opening: string, total: number, from = h): string => {
  const head = opening.match(/../g)?.map((byte) => Number.parseInt(byte, 16)) ?? []
  const bytes = [...head, ...Array.from({ length: total - head.length }, () => Math.floor(from.next() * 256))]
  return btoa(String.fromCharCode(...bytes))
}

/** DER openings of private keys (`30 len 02 01 version ...`) and of the public structures that must stay. */
export const derOpenings = {
  rsaPkcs8: ["308204bd020100300d06092a864886f70d0101010500048204a7", 1217],
  rsaPkcs1: ["308204a40201000282010100", 1192],
  ecSec1: ["30770201010420", 121],
  ed25519Pkcs8: ["302e020100300506032b657004220420", 48],
  encryptedPkcs8: ["30820530305a06092a864886f70d01050d304d", 1332],
  pkcs12: ["30820a41020103308209ff06092a864886f70d010701", 2629],
  rsaSpki: ["30820122300d06092a864886f70d01010105000382010f00", 294],
  certificate: ["3082037730820260a003020102020900", 891],
  csr: ["308202b43082019c020100", 696]
} as const

const der = (kind: keyof typeof derOpenings) => derBase64(derOpenings[kind][0], derOpenings[kind][1])
const wrap = (text: string, width: number, join: string) =>
  text.match(new RegExp(`.{1,${width}}`, "g"))?.join(join) ?? ""
const word = () =>
  `${h.pick(["hunter", "Sommer", "opensesame", "letmein", "Tr0ub4dor", "blue-Moon"])}${h.chars(DIGITS, 2)}`
const pw = () => `${word()}!${h.chars(ALNUM, 4)}`
const dockerAuth = () => btoa(`${h.pick(["ci", "deploy", "robot$svc"])}:${h.chars(ALNUM, 24)}`)

const addedExamples: Readonly<Record<string, RuleExamples>> = {
  "private-key-base64": {
    positives: [
      p("PRIVATE_KEY=", der("rsaPkcs8"), "\n"),
      p('{"signing_key": "', wrap(der("rsaPkcs1"), 64, "\\n"), '"}'),
      p("tls.key: |\n  ", wrap(der("ecSec1"), 64, "\n  "), "\ntls.crt: |"),
      p("", der("ed25519Pkcs8"), "\n"),
      p("key=", der("encryptedPkcs8"), " (encrypted)"),
      p('"certificate": "', der("pkcs12"), '"'),
      p("", wrap(der("rsaPkcs8"), 76, "\r\n"), "\r\n--boundary--"),
      p("identity: ", `b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB${h.chars(BASE64, 300)}`, "\n")
    ],
    negatives: [
      `PUBLIC_KEY=${der("rsaSpki")}`,
      `"x5c": ["${der("certificate")}"]`,
      `csr: ${der("csr")}`,
      `![chart](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA${h.chars(BASE64, 400)})`,
      `M${h.chars(BASE64, 200)}`,
      "MIT License, Copyright (c) 2024",
      `MIIEvgIBADANBgkqhkiG9w0BAQEFAASC`
    ]
  },
  "dynatrace-token": {
    positives: [p("Api-Token ", `dt0c01.${h.chars(`${UPPER}${DIGITS}`, 24)}.${h.chars(`${UPPER}${DIGITS}`, 64)}`)],
    negatives: ["dt0c01.SHORT.X", `dt0c01.${h.chars(`${UPPER}${DIGITS}`, 24)}`]
  },
  "docker-config-json": {
    positives: [
      p(
        "data:\n  .dockerconfigjson: ",
        btoa(JSON.stringify({ auths: { "ghcr.io": { auth: dockerAuth() } } })),
        "\ntype: kubernetes.io/dockerconfigjson"
      ),
      p(
        '{"data":{".dockercfg":"',
        btoa(JSON.stringify({ "https://index.docker.io/v1/": { auth: dockerAuth(), email: "ci@example.com" } })),
        '"}}'
      )
    ],
    negatives: [
      `.dockerconfigjson: ${btoa("plain text, not a docker config")}`,
      "kubectl create secret generic regcred --from-file=.dockerconfigjson=/home/ci/.docker/config.json"
    ]
  },
  "docker-config-auth": {
    positives: [
      p(String.raw`{\"auths\":{\"ghcr.io\":{\"auth\":\"`, dockerAuth(), String.raw`\"}}}`),
      p("auths:\n  registry.example.com:\n    auth: ", dockerAuth(), "\n"),
      p('{"https://index.docker.io/v1/": {"auth": "', dockerAuth(), '", "email": "ci@example.com"}}'),
      p("//registry.npmjs.org/:_auth=", dockerAuth(), "\n")
    ],
    negatives: ["auth: basic", `oauth: ${dockerAuth()}`, '"auth": "none"']
  },
  "cli-user-password": {
    positives: [
      p('curl -u ":', pw(), '" https://api.example.com'),
      p("curl --user kevin:'", `${word()} with spaces`, "' https://x"),
      p('curl -u "admin:', pw(), '" -X POST https://x'),
      p('curl --proxy-user bob:"', pw(), '" https://x'),
      p("curl --user=kevin:", pw(), " https://x")
    ],
    negatives: [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: shell references, not a template
      'curl -u "${USER}:${PASS}" https://x',
      "chown -R 1000:1000 /data && docker run -u 0:0 img"
    ]
  },
  "cli-password-option": {
    positives: [
      p("mysql -u root -p", pw(), " app_db"),
      p("mysqldump -h db.internal -P 3306 -uadmin -p'", `${word()} x`, "' --all-databases > dump.sql"),
      p('mariadb -p"', pw(), '" -e "SHOW DATABASES"'),
      p("sshpass -p ", pw(), " ssh deploy@10.0.0.5"),
      p("redis-cli -h cache.internal -p 6379 -a ", pw(), " ping"),
      p("docker login -u ci -p ", pw(), " registry.example.com"),
      p("helm registry login registry.example.com --username ci -p '", pw(), "'")
    ],
    negatives: [
      "mysql -u root -p app_db",
      "mysql -u root -p$MYSQL_ROOT_PASSWORD app_db",
      "mysql -h db -P 3306 -u app",
      "sshpass -f ~/.pw ssh deploy@host",
      "redis-cli -h cache -p 6379 ping",
      "docker login -u ci --password-stdin registry.example.com"
    ]
  },
  "authorization-header": {
    positives: [
      p("Authorization: Api-Token ", h.chars(ALNUM, 32)),
      p("authorization: SSWS ", `00${h.chars(URLSAFE, 40)}`, "\n"),
      p('-H "Authorization: Negotiate ', `YII${h.chars(BASE64, 60)}`, '"')
    ],
    negatives: ["Authorization: Required for all endpoints", "Authorization: Api-Token $DT_TOKEN"]
  },
  "connection-string-password": {
    positives: [
      p("jdbc:sqlserver://db.internal:1433;databaseName=app;user=svc;password=", pw(), ";encrypt=true"),
      p("jdbc:sqlserver://db:1433;user=sa;Password=", pw()),
      p("url=jdbc:jtds:sqlserver://h/app;user=u;pwd=", pw(), "\n"),
      p("Driver={ODBC Driver 18 for SQL Server};Server=tcp:h,1433;Uid=app;Pwd={", `${word()};x}}y`, "};"),
      p("Server=h;Database=d;User Id=u;Password=", `${word()} and spaces`, ";Trusted_Connection=False")
    ],
    negatives: [
      "Server=h;Database=d;Password=;",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a reference, not a template
      "jdbc:sqlserver://h;user=u;password=${DB_PASSWORD};",
      "Server=h;PasswordPolicy=strict;"
    ]
  },
  "cli-secret-flag": {
    positives: [
      p("mysql --password=", word(), " app"),
      p('vault login --token "', h.chars(ALNUM, 26), '"'),
      p("tool --api-key=", h.chars(ALNUM, 32), " run")
    ],
    negatives: [
      `aws s3api list-objects-v2 --bucket logs --starting-token ${btoa('{"ContinuationToken": null, "boto_truncate_amount": 2}')}`,
      `aws ec2 describe-instances --next-token ${h.chars(ALNUM, 60)}`,
      `aws logs filter-log-events --log-group-name g --next-token=${h.chars(URLSAFE, 40)}`,
      `aws s3api list-objects-v2 --continuation-token=${h.chars(BASE64, 50)}`,
      `gcloud compute instances list --page-token ${h.chars(URLSAFE, 30)}`,
      "docker build --secret id=npmrc,src=$HOME/.npmrc ."
    ]
  },
  "password-assignment": {
    positives: [
      p("jdbc:sqlserver://h:1433;user=u;password=", pw(), ";encrypt=true"),
      p('"A=1\\nPASSWORD=', pw(), '\\nDEBUG=1"'),
      p(String.raw`"{\"env\":\"A=1\\nDB_PASSWORD=`, pw(), String.raw`\\nB=2\"}"`),
      p('{"env": "HOST=db\\tDB_PASS=', pw(), '\\r\\nPORT=5432"}')
    ],
    negatives: ["jdbc:sqlserver://h;user=u;password=$DB_PASSWORD;"]
  },
  "secret-assignment": {
    positives: [p('"A=1\\nAPI_KEY=', h.chars(ALNUM, 32), '\\nB=2"')],
    negatives: [
      `{"NextToken": "${btoa('{"Marker": null, "boto_truncate_amount": 1}')}"}`,
      `{"nextToken": "${h.chars(ALNUM, 40)}=="}`,
      `{"nextForwardToken": "f/${h.chars(DIGITS, 56)}/s", "nextBackwardToken": "b/${h.chars(DIGITS, 56)}/s"}`,
      `{"PaginationToken": "${h.chars(ALNUM, 48)}", "StartingToken": "${h.chars(ALNUM, 48)}"}`,
      `{"ClientRequestToken": "Console-CreateStack-${h.chars(HEX, 8)}", "IdempotencyToken": "${h.chars(ALNUM, 24)}"}`,
      `https://graph.microsoft.com/v1.0/users?$skiptoken=${h.chars(URLSAFE, 60)}`,
      `{"ARN": "arn:aws:secretsmanager:us-east-1:${h.chars(DIGITS, 12)}:secret:prod/db-${h.chars(ALNUM, 6)}"}`,
      "  privateKey: Uint8Array"
    ]
  },
  "config-secret-assignment": {
    positives: [
      p("auth:\n  token: ", "abc", "\n"),
      p("TOKEN=", "abc", "\n"),
      p('secret = "', "correct horse", '"\n'),
      p('"A=1\\nTOKEN=', "abc", '\\nB=2"'),
      p("- client_secret: ", word(), " # rotated monthly"),
      p("export API_TOKEN=", word(), " && ./deploy.sh"),
      p("credentials = '", word(), "'"),
      p("password: ", "hunter", "\n"),
      p("[default]\naccess_token=", word(), "\n"),
      p('  "SECRET=', word(), '"')
    ],
    negatives: [
      "token: 5",
      "tokens: 1234",
      "max_tokens: 512",
      "token_count: 7",
      "secret: false",
      "secret: true",
      "secret: null",
      "secret: off",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell reference, not a template
      "token: ${TOKEN}",
      "token: <token>",
      "token: ***",
      "  - Token: gho_************************************",
      "secret: my-app-secret",
      "existingSecret: postgres-creds",
      "password: changeme",
      "api_key: aaaaaaaaaaaa",
      "token: |",
      "  privateKey: Buffer",
      "  token: Uint8Array",
      "  secret: Schema.String",
      "  password: URLPatternComponentResult;",
      '  credentials: "include"',
      "token = self.token",
      "token = abc",
      "token = tokens[i]",
      "  client_secret = var.client_secret",
      "    token: token",
      "NextToken: eyJNYXJrZXIiOiBudWxsfQ==",
      "auth_token_ttl: 3600",
      "const token = 'abc'",
      "the token: abc is shown"
    ]
  }
}

/** Every default rule's examples, by rule name. */
export const ruleExamples: Readonly<Record<string, RuleExamples>> = Object.fromEntries(
  [...new Set([...Object.keys(firstExamples), ...Object.keys(addedExamples)])].map((name) => [
    name,
    {
      positives: [...(firstExamples[name]?.positives ?? []), ...(addedExamples[name]?.positives ?? [])],
      negatives: [...(firstExamples[name]?.negatives ?? []), ...(addedExamples[name]?.negatives ?? [])]
    }
  ])
)
