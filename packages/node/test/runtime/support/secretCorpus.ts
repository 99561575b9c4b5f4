/**
 * A corpus of realistic secrets, each placed in a line of text the way it
 * turns up in tool output: environment files, JSON, logs, shell commands,
 * prose, code, YAML, key files.
 *
 * Every value is generated from its vendor's published format (prefix,
 * length, charset, structure; checksums where the format has one) by a seeded
 * generator: the corpus is the same on every run, and no real or copied
 * credential sits in the repository.
 */

const generator = (seed: number) => {
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
  return { pick, chars }
}

const HEX = "0123456789abcdef"
const DIGITS = "0123456789"
const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
const LOWER = "abcdefghijklmnopqrstuvwxyz"
const ALNUM = `${UPPER}${LOWER}${DIGITS}`
const URLSAFE = `${ALNUM}_-`
const BASE64 = `${ALNUM}+/`

/** One secret in its context; `secret` is what must not survive. */
export interface CorpusEntry {
  readonly kind: string
  readonly text: string
  readonly secret: string
}

const g = generator(0xc0ffee19)
const { chars, pick } = g

const luhnComplete = (digits: string): string => {
  for (let check = 0; check <= 9; check++) {
    const candidate = `${digits}${check}`
    let sum = 0
    for (let index = 0; index < candidate.length; index++) {
      let digit = Number(candidate[candidate.length - 1 - index])
      if (index % 2 === 1) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2
      sum += digit
    }
    if (sum % 10 === 0) return candidate
  }
  throw new Error("unreachable")
}

const words = ["Sommer", "blue", "Falcon", "rocket", "Maple", "quartz", "tiger", "Nimbus", "orbit", "violet"]
/** Symbols a password may hold unescaped in every context below (a URL's user info included). */
const symbols = "!*+-._~^"
const humanPassword = () =>
  `${pick(words)}${pick(words).toLowerCase()}${chars(DIGITS, 2)}${chars(symbols, 1)}${chars(ALNUM, 3)}`

/** Contexts for a token whose format identifies it, named `env`/`json` where a name is shown. */
const tokenContexts = (env: string, json: string): ReadonlyArray<(v: string) => string> => [
  (v) => `export ${env}=${v}`,
  (v) => `{"${json}": "${v}", "note": "rotated weekly"}`,
  (v) => `2024-05-01T10:00:00.123Z INFO worker-3 loaded credential ${v} from cache`,
  (v) => `curl -sS -H "X-Trace: ${v}" https://api.example.com/v1/items`,
  (v) => `Please rotate ${v} before Friday, it was pasted in the channel.`,
  (v) => `client = Client("${v}", timeout=30)`
]

interface Kind {
  readonly kind: string
  readonly count: number
  /** A fresh value and, when only part of it is secret, that part. */
  readonly value: () => { readonly value: string; readonly secret?: string }
  readonly contexts: ReadonlyArray<(v: string) => string>
}

const token = (kind: string, env: string, json: string, make: () => string, count = 6): Kind => ({
  kind,
  count,
  value: () => ({ value: make() }),
  contexts: tokenContexts(env, json)
})

const pemBody = (lines: number) => Array.from({ length: lines }, () => chars(BASE64, 64))
const keyBlock = (label: string) => {
  const body = [...pemBody(5), `${chars(BASE64, 24)}==`]
  return { value: `-----BEGIN ${label}-----\n${body.join("\n")}\n-----END ${label}-----`, secret: body.join("\n") }
}
const keyContexts: ReadonlyArray<(v: string) => string> = [
  (v) => `$ cat ~/.ssh/id_key\n${v}\n$ ls`,
  (v) =>
    `{"type": "service_account", "private_key": "${v.replaceAll("\n", "\\n")}\\n", "client_email": "svc@proj.iam.gserviceaccount.com"}`,
  (v) =>
    `tls:\n  key: |\n${v
      .split("\n")
      .map((line) => `    ${line}`)
      .join("\n")}\n  cert: cert.pem`
]

const kinds: ReadonlyArray<Kind> = [
  // Cloud.
  token("aws-access-key-id", "AWS_ACCESS_KEY_ID", "AccessKeyId", () => `AKIA${chars(`${UPPER}234567`, 16)}`),
  {
    kind: "aws-secret-access-key",
    count: 6,
    value: () => ({ value: chars(BASE64, 40) }),
    contexts: [
      (v) => `AWS_SECRET_ACCESS_KEY=${v}`,
      (v) => `[default]\naws_secret_access_key = ${v}`,
      (v) => `{"SecretAccessKey": "${v}", "Expiration": "2025-01-01T00:00:00Z"}`,
      (v) => `aws_secret_access_key: "${v}"`,
      (v) => `export AWS_SECRET_KEY='${v}'`,
      (v) => `secret_access_key => "${v}",`
    ]
  },
  {
    kind: "aws-session-token",
    count: 3,
    value: () => ({ value: `IQoJb3JpZ2luX2Vj${chars(BASE64, 300)}` }),
    contexts: [(v) => `AWS_SESSION_TOKEN=${v}`, (v) => `{"SessionToken": "${v}"}`, (v) => `aws_session_token = ${v}`]
  },
  token("google-api-key", "GOOGLE_API_KEY", "apiKey", () => `AIza${chars(URLSAFE, 35)}`),
  token("google-oauth-client-secret", "GOOGLE_CLIENT_SECRET", "client_secret", () => `GOCSPX-${chars(URLSAFE, 28)}`, 4),
  token("google-oauth-refresh-token", "GOOGLE_REFRESH_TOKEN", "refresh_token", () => `1//0${chars(URLSAFE, 100)}`, 4),
  {
    kind: "azure-storage-connection-string",
    count: 4,
    value: () => {
      const key = `${chars(BASE64, 86)}==`
      return {
        value: `DefaultEndpointsProtocol=https;AccountName=acct${chars(LOWER, 4)};AccountKey=${key};EndpointSuffix=core.windows.net`,
        secret: key
      }
    },
    contexts: [
      (v) => `AZURE_STORAGE_CONNECTION_STRING="${v}"`,
      (v) => `{"ConnectionStrings": {"Storage": "${v}"}}`,
      (v) => `connecting with ${v}`,
      (v) => `  - name: storage\n    value: ${v}`
    ]
  },
  token(
    "azure-ad-client-secret",
    "AZURE_CLIENT_SECRET",
    "clientSecret",
    () => `${chars(ALNUM, 3)}8Q~${chars(`${ALNUM}_~.-`, 34)}`,
    4
  ),
  token("digitalocean-token", "DIGITALOCEAN_TOKEN", "token", () => `dop_v1_${chars(HEX, 64)}`, 4),
  token("heroku-api-key", "HEROKU_API_KEY", "apiKey", () => `HRKU-AA${chars(URLSAFE, 58)}`, 4),

  // Source hosts and CI.
  token("github-classic-token", "GITHUB_TOKEN", "token", () => `ghp_${chars(ALNUM, 36)}`),
  token(
    "github-app-token",
    "GH_APP_TOKEN",
    "installation_token",
    () => `${pick(["ghs_", "gho_", "ghu_"])}${chars(ALNUM, 36)}`,
    4
  ),
  token(
    "github-fine-grained-token",
    "GH_PAT",
    "pat",
    () => `github_pat_11${chars(`${UPPER}${DIGITS}`, 20)}_${chars(ALNUM, 59)}`,
    4
  ),
  token("gitlab-personal-token", "GITLAB_TOKEN", "private_token", () => `glpat-${chars(URLSAFE, 20)}`),
  token("gitlab-runner-token", "RUNNER_TOKEN", "token", () => `glrt-${chars(URLSAFE, 20)}`, 4),
  token("bitbucket-app-password", "BITBUCKET_APP_PASSWORD", "app_password", () => `ATBB${chars(ALNUM, 32)}`, 4),
  token(
    "atlassian-api-token",
    "JIRA_API_TOKEN",
    "apiToken",
    () => `ATATT3xFfGF0${chars(URLSAFE, 170)}=${chars(HEX.toUpperCase(), 8)}`,
    4
  ),
  token("circleci-token", "CIRCLE_TOKEN", "token", () => `CCIPAT_${chars(ALNUM, 22)}_${chars(HEX, 40)}`, 4),
  token("npm-token", "NPM_TOKEN", "authToken", () => `npm_${chars(ALNUM, 36)}`),
  token("pypi-token", "TWINE_PASSWORD", "password", () => `pypi-AgEIcHlwaS5vcmc${chars(URLSAFE, 140)}`, 4),
  token("docker-hub-token", "DOCKERHUB_TOKEN", "token", () => `dckr_pat_${chars(URLSAFE, 27)}`, 4),
  token(
    "terraform-cloud-token",
    "TF_TOKEN_app_terraform_io",
    "token",
    () => `${chars(ALNUM, 14)}.atlasv1.${chars(URLSAFE, 67)}`,
    4
  ),
  token("vault-token", "VAULT_TOKEN", "client_token", () => `hvs.${chars(URLSAFE, 90)}`),
  token("databricks-token", "DATABRICKS_TOKEN", "token", () => `dapi${chars(HEX, 32)}`, 4),
  token("sentry-auth-token", "SENTRY_AUTH_TOKEN", "token", () => `sntryu_${chars(HEX, 64)}`, 3),
  token("grafana-service-token", "GRAFANA_TOKEN", "token", () => `glsa_${chars(ALNUM, 32)}_${chars(HEX, 8)}`, 3),

  // Chat and messaging.
  token(
    "slack-bot-token",
    "SLACK_BOT_TOKEN",
    "bot_token",
    () => `xoxb-${chars(DIGITS, 12)}-${chars(DIGITS, 13)}-${chars(ALNUM, 24)}`
  ),
  token(
    "slack-user-token",
    "SLACK_USER_TOKEN",
    "user_token",
    () => `xoxp-${chars(DIGITS, 12)}-${chars(DIGITS, 12)}-${chars(DIGITS, 13)}-${chars(HEX, 32)}`,
    4
  ),
  {
    kind: "slack-webhook",
    count: 5,
    value: () => {
      const path = `services/T${chars(UPPER, 8)}/B${chars(UPPER, 10)}/${chars(ALNUM, 24)}`
      return { value: `https://hooks.slack.com/${path}`, secret: path }
    },
    contexts: tokenContexts("SLACK_WEBHOOK_URL", "webhook")
  },
  {
    kind: "discord-webhook",
    count: 4,
    value: () => {
      const secret = chars(URLSAFE, 68)
      return { value: `https://discord.com/api/webhooks/${chars(DIGITS, 19)}/${secret}`, secret }
    },
    contexts: tokenContexts("DISCORD_WEBHOOK", "url")
  },
  token("telegram-bot-token", "TELEGRAM_BOT_TOKEN", "token", () => `${chars(DIGITS, 10)}:AA${chars(URLSAFE, 33)}`, 4),
  token("twilio-api-key", "TWILIO_API_KEY", "sid", () => `SK${chars(HEX, 32)}`, 4),
  token("sendgrid-api-key", "SENDGRID_API_KEY", "apiKey", () => `SG.${chars(URLSAFE, 22)}.${chars(URLSAFE, 43)}`),
  token("mailgun-api-key", "MAILGUN_API_KEY", "key", () => `key-${chars(HEX, 32)}`, 4),
  token("mailchimp-api-key", "MAILCHIMP_API_KEY", "apikey", () => `${chars(HEX, 32)}-us${chars(DIGITS, 2)}`, 4),

  // Payments.
  token("stripe-live-secret-key", "STRIPE_SECRET_KEY", "secret_key", () => `sk_live_${chars(ALNUM, 99)}`),
  token("stripe-restricted-key", "STRIPE_RESTRICTED_KEY", "key", () => `rk_live_${chars(ALNUM, 99)}`),
  token("stripe-test-key", "STRIPE_TEST_KEY", "key", () => `sk_test_${chars(ALNUM, 24)}`),
  token("stripe-webhook-secret", "STRIPE_WEBHOOK_SECRET", "signing_secret", () => `whsec_${chars(ALNUM, 32)}`, 4),
  token("square-access-token", "SQUARE_ACCESS_TOKEN", "access_token", () => `EAAA${chars(URLSAFE, 60)}`, 4),
  token("shopify-access-token", "SHOPIFY_ACCESS_TOKEN", "access_token", () => `shpat_${chars(HEX, 32)}`, 4),
  {
    kind: "payment-card-number",
    count: 5,
    value: () => {
      const digits = luhnComplete(`${pick(["4", "51", "55", "2221"])}${chars(DIGITS, 10)}`.padEnd(15, "7"))
      return { value: pick([digits, digits.replace(/(\d{4})(?=\d)/g, "$1 "), digits.replace(/(\d{4})(?=\d)/g, "$1-")]) }
    },
    contexts: [
      (v) => `charge card ${v} exp 12/27 cvc 123`,
      (v) => `{"card_number": "${v}", "exp": "12/27"}`,
      (v) => `customer read out ${v} over the phone`,
      (v) => `PAN=${v}`,
      (v) => `| 1 | ${v} | approved |`
    ]
  },

  // Model providers.
  token("openai-project-key", "OPENAI_API_KEY", "api_key", () => `sk-proj-${chars(URLSAFE, 156)}`),
  token("openai-legacy-key", "OPENAI_KEY", "key", () => `sk-${chars(ALNUM, 20)}T3BlbkFJ${chars(ALNUM, 20)}`, 4),
  token("anthropic-api-key", "ANTHROPIC_API_KEY", "x-api-key", () => `sk-ant-api03-${chars(URLSAFE, 93)}AA`),
  token("groq-api-key", "GROQ_API_KEY", "apiKey", () => `gsk_${chars(ALNUM, 52)}`, 4),
  token("huggingface-token", "HF_TOKEN", "token", () => `hf_${chars(`${UPPER}${LOWER}`, 34)}`, 4),
  token("xai-api-key", "XAI_API_KEY", "apiKey", () => `xai-${chars(ALNUM, 80)}`, 3),
  token("openrouter-api-key", "OPENROUTER_API_KEY", "key", () => `sk-or-v1-${chars(HEX, 64)}`, 3),

  // Private keys and tokens with structure.
  { kind: "rsa-private-key", count: 3, value: () => keyBlock("RSA PRIVATE KEY"), contexts: keyContexts },
  { kind: "pkcs8-private-key", count: 3, value: () => keyBlock("PRIVATE KEY"), contexts: keyContexts },
  { kind: "openssh-private-key", count: 3, value: () => keyBlock("OPENSSH PRIVATE KEY"), contexts: keyContexts },
  { kind: "ec-private-key", count: 3, value: () => keyBlock("EC PRIVATE KEY"), contexts: keyContexts },
  {
    kind: "pgp-private-key",
    count: 3,
    value: () => {
      const body = [`lQOYBF${chars(BASE64, 58)}`, ...pemBody(4), `=${chars(BASE64, 4)}`]
      return {
        value: `-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n${body.join("\n")}\n-----END PGP PRIVATE KEY BLOCK-----`,
        secret: body.join("\n")
      }
    },
    contexts: keyContexts
  },
  {
    kind: "jwt",
    count: 6,
    value: () => {
      const part = (json: string) => btoa(json).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_")
      return {
        value: `${part('{"alg":"RS256","typ":"JWT"}')}.${part(`{"sub":"${chars(DIGITS, 12)}","scope":"admin"}`)}.${chars(URLSAFE, 86)}`
      }
    },
    contexts: tokenContexts("ID_TOKEN", "id_token")
  },

  // Credentials in URLs, headers and commands.
  ...(["postgres", "mysql", "mongodb+srv", "redis", "amqps", "https"] as const).map(
    (scheme): Kind => ({
      kind: `url-credentials-${scheme.replace(/\W/g, "")}`,
      count: 4,
      value: () => {
        const password = humanPassword()
        const user = scheme === "redis" ? "" : pick(["admin", "app", "svc_reader"])
        return {
          value: `${scheme}://${user}:${password}@db-${chars(LOWER, 5)}.internal.example.com:5432/app`,
          secret: password
        }
      },
      contexts: [
        (v) => `DATABASE_URL=${v}`,
        (v) => `{"dsn": "${v}"}`,
        (v) => `connecting to ${v} (attempt 2)`,
        (v) => `psql "${v}" -c 'select 1'`
      ]
    })
  ),
  {
    kind: "http-basic-header",
    count: 5,
    value: () => ({ value: btoa(`${pick(["admin", "ci", "deploy"])}:${humanPassword()}`) }),
    contexts: [
      (v) => `Authorization: Basic ${v}`,
      (v) => `curl -H "Authorization: Basic ${v}" https://registry.example.com/v2/`,
      (v) => `{"headers": {"authorization": "Basic ${v}"}}`,
      (v) => `> GET /api HTTP/1.1\n> authorization: basic ${v}\n>`,
      (v) => `proxy_set_header Authorization "Basic ${v}";`
    ]
  },
  {
    kind: "curl-user-password",
    count: 4,
    value: () => ({ value: humanPassword() }),
    contexts: [
      (v) => `curl -u admin:${v} https://jenkins.example.com/api/json`,
      (v) => `curl --user deploy:${v} -X POST https://example.com/hook`,
      (v) => `wget --http-user=bob --user=bob:${v} https://files.example.com/x.tgz`,
      (v) => `$ curl -s -u ci-bot:${v} "https://nexus.example.com/repository"`
    ]
  },
  {
    kind: "bearer-token",
    count: 4,
    value: () => ({ value: `${chars(ALNUM, 32)}.${chars(URLSAFE, 24)}` }),
    contexts: [
      (v) => `Authorization: Bearer ${v}`,
      (v) => `curl -H 'authorization: bearer ${v}' https://api.example.com`,
      (v) => `{"Authorization": "Bearer ${v}"}`,
      (v) => `headers = {"Authorization": f"Bearer ${v}"}`
    ]
  },
  {
    kind: "docker-config-auth",
    count: 3,
    value: () => ({ value: btoa(`robot$ci:${chars(ALNUM, 32)}`) }),
    contexts: [
      (v) => `{"auths": {"registry.example.com": {"auth": "${v}"}}}`,
      (v) => `{\n  "auths": {\n    "ghcr.io": {\n      "auth": "${v}"\n    }\n  }\n}`,
      (v) => `cat ~/.docker/config.json -> {"auth": "${v}"}`
    ]
  },
  {
    kind: "netrc-password",
    count: 3,
    value: () => ({ value: humanPassword() }),
    contexts: [
      (v) => `machine api.example.com\n  login bob\n  password ${v}`,
      (v) => `machine github.com login x-oauth password ${v}`,
      (v) => `default\nmachine ftp.example.org login anonymous password ${v}\n`
    ]
  },

  // Assignments: the name says it is a secret; any operator, any quoting.
  {
    kind: "password-env-prefixed",
    count: 6,
    value: () => ({ value: humanPassword() }),
    contexts: [
      (v) => `DB_PASSWORD=${v}`,
      (v) => `MYSQL_ROOT_PASSWORD: ${v}`,
      (v) => `export POSTGRES_PASSWORD="${v}"`,
      (v) => `spring.datasource.password=${v}`,
      (v) => `  - name: REDIS_PASSWORD\n    value: "${v}"`,
      (v) => `SMTP_PASS=${v}`
    ]
  },
  {
    kind: "password-operators",
    count: 6,
    value: () => ({ value: humanPassword() }),
    contexts: [
      (v) => `PASSWORD := "${v}"`,
      (v) => `PASSWORD ?= ${v}`,
      (v) => `'password' => '${v}',`,
      (v) => `"password" => "${v}"`,
      (v) => `password = '${v}'`,
      (v) => `db.password += ${v}`
    ]
  },
  {
    kind: "password-quoting",
    count: 6,
    value: () => ({ value: humanPassword() }),
    contexts: [
      (v) => `{"password": "${v}", "user": "admin"}`,
      (v) => `{"body": "{\\"password\\": \\"${v}\\"}"}`,
      (v) => `login(password=\\"${v}\\")`,
      (v) => `const config = { password: \`${v}\` }`,
      (v) => `<password>${v}</password>`,
      (v) => `mysqldump --password ${v} app > dump.sql`
    ]
  },
  {
    kind: "password-connection-params",
    count: 4,
    value: () => ({ value: humanPassword() }),
    contexts: [
      (v) => `Server=db;Database=app;User Id=app;Password=${v};`,
      (v) => `jdbc:mysql://db:3306/app?user=app&password=${v}&useSSL=true`,
      (v) => `host=db port=5432 dbname=app user=app password=${v}`,
      (v) => `https://example.com/login?username=ann&password=${v}`
    ]
  },
  {
    kind: "generic-api-key-assignment",
    count: 6,
    value: () => ({ value: chars(ALNUM, 40) }),
    contexts: [
      (v) => `DATADOG_API_KEY=${v}`,
      (v) => `X-Api-Key: ${v}`,
      (v) => `"apiKey": "${v}",`,
      (v) => `algolia_api_key = "${v}"`,
      (v) => `CLIENT_SECRET => '${v}'`,
      (v) => `api-key: ${v}`
    ]
  },
  {
    kind: "generic-secret-assignment",
    count: 6,
    value: () => ({ value: `${chars(ALNUM, 1)}${chars(URLSAFE, 23)}${chars(DIGITS, 4)}${chars(UPPER, 4)}` }),
    contexts: [
      (v) => `SECRET_KEY = "${v}"`,
      (v) => `JWT_SECRET=${v}`,
      (v) => `session_secret: '${v}'`,
      (v) => `"webhookSecret": "${v}"`,
      (v) => `ENCRYPTION_KEY := "${v}"`,
      (v) => `auth_token ?= ${v}`
    ]
  }
]

/** The corpus: every kind, each value in one of its contexts (cycling through them). */
export const secretCorpus: ReadonlyArray<CorpusEntry> = kinds.flatMap((kind) =>
  Array.from({ length: kind.count }, (_, index) => {
    const { secret, value } = kind.value()
    const context = kind.contexts[index % kind.contexts.length] as (v: string) => string
    return { kind: kind.kind, text: context(value), secret: secret ?? value }
  })
)

/**
 * Whether any of `secret` survives in `output`: the whole value, any line of
 * it of six characters or more, or any 16 characters of a line (checked at
 * every fourth offset, so any 19 surviving characters are seen).
 */
export const leaked = (output: string, secret: string): boolean => {
  if (output.includes(secret)) return true
  for (const piece of secret.split(/\s+/)) {
    if (piece.length >= 6 && output.includes(piece)) return true
    for (let at = 0; at + 16 <= piece.length; at += 4) if (output.includes(piece.slice(at, at + 16))) return true
  }
  return false
}
