/**
 * A second, independent corpus of secrets in the formats agents meet them in:
 * connection strings, shell commands (curl, mysql, sshpass, redis-cli),
 * JSON-escaped .env files, Authorization headers with named schemes, Docker
 * configs, private keys as bare base64, values under generic names in YAML,
 * HCL and .env files, and vendor tokens in config files, URLs and headers.
 *
 * It was written apart from the rules' own examples (`ruleExamples.ts`) and
 * from `secretCorpus.ts`: its contexts are lines as tools print them, not
 * shapes a rule was written for. Every value is fake: drawn by a seeded
 * generator in its vendor's published shape (prefix, length, charset) or,
 * for DER keys, as random bytes behind a key's DER opening; no real or
 * copied credential is here, and the corpus is the same on every run.
 */
import type { CorpusEntry } from "./secretCorpus.ts"

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
  return { next, pick, chars }
}

const HEX = "0123456789abcdef"
const DIGITS = "0123456789"
const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
const LOWER = "abcdefghijklmnopqrstuvwxyz"
const ALNUM = `${UPPER}${LOWER}${DIGITS}`
const URLSAFE = `${ALNUM}_-`
const BASE64 = `${ALNUM}+/`

const g = generator(0x7ea1f0a7)
const { chars, pick } = g

const words = ["harbor", "Copper", "lantern", "Meadow", "pixel", "Saturn", "walnut", "Zephyr", "cobalt", "Juniper"]
/** A password a person chose: words, digits, a symbol safe unescaped in every context below (a URL's user info too). */
const password = () => `${pick(words)}${pick(words).toLowerCase()}${chars(DIGITS, 3)}${pick(["!", "^", "+", "~", "*"])}`
/** A password with a space (ODBC, quoted shell arguments). */
const phrase = () => `${pick(words)} ${pick(words).toLowerCase()} ${chars(DIGITS, 4)}`
const token = (length = 32) => chars(ALNUM, length)
const hex = (length: number) => chars(HEX, length)
const uuid = () => `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`

/** Random bytes behind a DER opening (hex), base64-encoded: a private key's shape, not a key. */
const der = (opening: string, total: number) => {
  const head = opening.match(/../g)?.map((byte) => Number.parseInt(byte, 16)) ?? []
  const bytes = [...head, ...Array.from({ length: total - head.length }, () => Math.floor(g.next() * 256))]
  return btoa(String.fromCharCode(...bytes))
}
const derKeys = {
  "pkcs8-rsa": () => der("308204be020100300d06092a864886f70d0101010500048204a8", 1218),
  "pkcs1-rsa": () => der("308204a30201000282010100", 1191),
  "sec1-ec": () => der("30770201010420", 121),
  "pkcs8-ec": () => der("308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420", 138),
  "pkcs8-ed25519": () => der("302e020100300506032b657004220420", 48),
  "encrypted-pkcs8": () => der("3082052d305706092a864886f70d01050d304a", 1329),
  pkcs12: () => der("30820a5a02010330820a2006092a864886f70d010701", 2654)
}
const wrap = (text: string, width: number, join: string) =>
  text.match(new RegExp(`.{1,${width}}`, "g"))?.join(join) ?? ""

/** A value as a context shows it: the text, and the secret as it appears there (wrapped, say) when it differs. */
type Shown = string | { readonly text: string; readonly secret: string }
/** One entry per context, each with a fresh value. */
const each = (
  kind: string,
  value: () => string,
  contexts: ReadonlyArray<(v: string) => Shown>
): ReadonlyArray<CorpusEntry> =>
  contexts.map((context) => {
    const v = value()
    const shown = context(v)
    return typeof shown === "string" ? { kind, text: shown, secret: v } : { kind, ...shown }
  })
/** `v` wrapped at `width` columns with `join` between lines, inside `around`. */
const wrapped = (v: string, width: number, join: string, around: (body: string) => string): Shown => {
  const body = wrap(v, width, join)
  return { text: around(body), secret: body }
}

const connectionStrings = [
  ...each("jdbc-sqlserver-password", password, [
    (v) => `spring.datasource.url=jdbc:sqlserver://sql01.corp.local:1433;databaseName=orders;user=app;password=${v}`,
    (v) => `jdbc:sqlserver://db.internal:1433;user=sa;password=${v};encrypt=true;trustServerCertificate=false`,
    (v) => `  "url": "jdbc:sqlserver://10.1.4.20:1433;databaseName=hr;user=report;Password=${v};loginTimeout=30",`,
    (v) => `DATABASE_URL='jdbc:sqlserver://mssql:1433;DatabaseName=app;User=svc_app;Password=${v}'`,
    (v) => `Caused by: connection failed for jdbc:sqlserver://h:1433;user=u;password=${v}`
  ]),
  ...each("jdbc-pwd", password, [
    (v) => `jdbc:jtds:sqlserver://legacy-db:1433/crm;user=crm;pwd=${v}`,
    (v) => `url: "jdbc:sqlserver://db:1433;uid=etl;pwd=${v};applicationName=etl"`,
    (v) => `connect jdbc:sybase:Tds:syb01:5000/billing;user=bill;PWD=${v}`
  ]),
  ...each("odbc-pwd", password, [
    (v) => `Driver={ODBC Driver 18 for SQL Server};Server=tcp:sql.example.net,1433;Uid=app;Pwd=${v};Encrypt=yes;`,
    (v) => `DSN=warehouse;UID=analyst;PWD=${v}`,
    (v) => `conn = pyodbc.connect("DRIVER={PostgreSQL Unicode};SERVER=pg;DATABASE=app;UID=app;PWD=${v}")`
  ]),
  ...each("odbc-braced-password", () => `${password()};x`, [
    (v) => `Driver={ODBC Driver 17 for SQL Server};Server=h;Uid=u;Pwd={${v}};`,
    (v) => `Server=h;Database=d;User Id=u;Password={${v}};MultipleActiveResultSets=true`
  ]),
  ...each("adonet-password-with-spaces", phrase, [
    (v) => `"DefaultConnection": "Server=sql01;Database=Shop;User Id=shop;Password=${v};TrustServerCertificate=True"`,
    (v) => `Data Source=ora01:1521/ORCL;User Id=scott;Password=${v};`
  ])
]

const curl = [
  ...each("curl-user-empty-name", password, [
    (v) => `curl -u ":${v}" https://api.example.com/v1/status`,
    (v) => `curl -s -u ':${v}' https://registry.example.com/v2/_catalog`
  ]),
  ...each("curl-user-password", password, [
    (v) => `curl -u deploy:${v} https://nexus.example.com/repository/raw/app.tgz -O`,
    (v) => `curl --user kevin:'${v}' https://jira.example.com/rest/api/2/myself`,
    (v) => `curl --user=kevin:${v} -X POST https://ci.example.com/job/build`,
    (v) => `curl -fsSL -u "admin:${v}" http://localhost:9200/_cluster/health`,
    (v) => `wget --http-user=mirror --http-password=x --user mirror:${v} https://mirror.example.com/iso`,
    (v) => `curl --proxy-user proxyuser:"${v}" -x http://proxy:3128 https://example.com`
  ]),
  ...each("curl-user-phrase", phrase, [(v) => `curl -u 'ops:${v}' https://grafana.example.com/api/health`])
]

const escapedEnv = [
  ...each("json-escaped-env-password", password, [
    (v) => `{"name": "app", "env_file": "A=1\\nPASSWORD=${v}\\nDEBUG=false"}`,
    (v) => `{"content": "DB_HOST=db\\nDB_PASSWORD=${v}\\nDB_PORT=5432\\n"}`,
    (v) => `"stdout": "export PGPASSWORD=${v}\\r\\nexport PGHOST=db\\r\\n"`
  ]),
  ...each("json-escaped-env-token", () => token(24), [
    (v) => `{"file": ".env", "text": "A=1\\nPASSWORD=${password()}\\nTOKEN=${v}"}`,
    (v) => `{"content": "NODE_ENV=production\\nAPI_TOKEN=${v}\\nPORT=3000"}`,
    (v) => `{"env": "SLACK_SIGNING_SECRET=${v}\\tLOG_LEVEL=info"}`
  ]),
  ...each("json-escaped-env-short-token", () => `${chars(LOWER, 5)}${chars(DIGITS, 2)}`, [
    (v) => `{"text": "USER=ci\\nTOKEN=${v}\\nREGION=eu-west-1"}`,
    (v) => `"{\\"env\\":\\"A=1\\\\nSECRET=${v}\\\\nB=2\\"}"`
  ])
]

const cliPasswords = [
  ...each("mysql-attached-password", password, [
    (v) => `mysql -u root -p${v} app_production`,
    (v) => `$ mysql -h 10.0.3.7 -P 3306 -uadmin -p${v} -e "SHOW PROCESSLIST"`,
    (v) => `mysqldump -u backup -p'${v}' --single-transaction shop > shop.sql`,
    (v) => `docker exec db mysql -uroot -p"${v}" -e "CREATE DATABASE app"`,
    (v) => `mariadb -u app -p${v} -h mariadb.internal app`,
    (v) => `mysqladmin -u root -p${v} status`
  ]),
  ...each("mysql-password-flag", password, [
    (v) => `mysql --user=root --password=${v} --host=db app`,
    (v) => `mysqldump --password=${v} --all-databases`
  ]),
  ...each("sshpass-password", password, [
    (v) => `sshpass -p '${v}' ssh -o StrictHostKeyChecking=no deploy@10.0.0.12 uptime`,
    (v) => `sshpass -p ${v} scp build.tar.gz ops@bastion:/tmp/`
  ]),
  ...each("redis-cli-password", password, [
    (v) => `redis-cli -h redis.internal -p 6379 -a ${v} INFO replication`,
    (v) => `redis-cli --user default --pass ${v} -h cache ping`
  ]),
  ...each("registry-login-password", password, [
    (v) => `docker login -u ci -p ${v} registry.example.com`,
    (v) => `echo ok && podman login --username bot -p '${v}' quay.io`,
    (v) => `helm registry login registry.example.com --username ci -p ${v}`
  ]),
  ...each("env-prefix-password", password, [
    (v) => `PGPASSWORD=${v} psql -h db -U app -c 'select 1'`,
    (v) => `MYSQL_PWD=${v} mysql -u root -e 'show databases'`
  ]),
  ...each("kubectl-from-literal", password, [
    (v) => `kubectl create secret generic db-creds --from-literal=username=app --from-literal=password=${v}`
  ]),
  ...each("cli-flag-equals", () => token(28), [
    (v) => `terraform login --token=${v}`,
    (v) => `heroku-cli-plugin auth --api-key=${v} --app demo`,
    (v) => `vault login --token "${v}"`
  ])
]

const authorizationSchemes = [
  ...each("authorization-api-token", () => token(40), [
    (v) => `curl -H "Authorization: Api-Token ${v}" https://abc123.live.dynatrace.com/api/v2/metrics`,
    (v) => `Authorization: Api-Token ${v}`,
    (v) => `  "headers": {"Authorization": "Api-Token ${v}"},`
  ]),
  ...each("dynatrace-token", () => `dt0c01.${chars(`${UPPER}${DIGITS}`, 24)}.${chars(`${UPPER}${DIGITS}`, 64)}`, [
    (v) => `DT_API_TOKEN=${v}`,
    (v) => `Authorization: Api-Token ${v}`
  ]),
  ...each("authorization-ssws", () => `00${chars(URLSAFE, 40)}`, [
    (v) => `curl -H "Authorization: SSWS ${v}" https://dev-1.okta.com/api/v1/users`,
    (v) => `authorization: SSWS ${v}`
  ]),
  ...each("authorization-token-scheme", () => hex(40), [
    (v) => `-H 'Authorization: token ${v}'`,
    (v) => `Authorization: Token token=${v}`
  ]),
  ...each("authorization-negotiate", () => `YII${chars(BASE64, 90)}`, [(v) => `Authorization: Negotiate ${v}`])
]

const dockerAuth = () => btoa(`${pick(["ci", "robot$deployer", "AWS", "oauth2accesstoken"])}:${token(36)}`)
const docker = [
  ...each("docker-config-auth", dockerAuth, [
    (v) => `{"auths": {"https://index.docker.io/v1/": {"auth": "${v}"}}}`,
    (v) => `{"auths":{"ghcr.io":{"auth":"${v}"},"quay.io":{"auth":""}},"credsStore":"desktop"}`,
    (v) => `{"https://index.docker.io/v1/": {"auth": "${v}", "email": "ci@example.com"}}`,
    (v) => `{\\"auths\\":{\\"registry.gitlab.com\\":{\\"auth\\":\\"${v}\\"}}}`,
    (v) => `auths:\n  registry.example.com:\n    auth: ${v}`,
    (v) => `\t\t\t"auth": "${v}",`
  ]),
  ...each(
    "dockerconfigjson-base64",
    () => btoa(JSON.stringify({ auths: { "registry.example.com": { auth: dockerAuth() } } })),
    [
      (v) => `apiVersion: v1\ndata:\n  .dockerconfigjson: ${v}\nkind: Secret`,
      (v) => `{"data": {".dockerconfigjson": "${v}"}, "type": "kubernetes.io/dockerconfigjson"}`
    ]
  ),
  ...each("npmrc-auth", () => btoa(`ci:${password()}`), [
    (v) => `//registry.npmjs.org/:_auth=${v}`,
    (v) => `_auth = ${v}`
  ]),
  ...each(
    "dockercfg-base64",
    () => btoa(JSON.stringify({ "https://index.docker.io/v1/": { auth: dockerAuth(), email: "a@b.c" } })),
    [(v) => `  .dockercfg: ${v}`]
  )
]

const keys = [
  ...each("der-pkcs8-rsa", derKeys["pkcs8-rsa"], [
    (v) => `PRIVATE_KEY=${v}`,
    (v) => `{"private_key_der": "${v}"}`,
    (v) => wrapped(v, 64, "\n    ", (body) => `signing:\n  key: |\n    ${body}\n  algorithm: RS256`)
  ]),
  ...each("der-pkcs1-rsa", derKeys["pkcs1-rsa"], [
    (v) => v,
    (v) => `export JWT_KEY="${v}"`,
    (v) => wrapped(v, 64, "\\n", (body) => `{"key": "${body}"}`)
  ]),
  ...each("der-sec1-ec", derKeys["sec1-ec"], [(v) => `ec_key = "${v}"`, (v) => `$ cat key.b64\n${v}\n$`]),
  ...each("der-pkcs8-ec", derKeys["pkcs8-ec"], [(v) => `APPLE_PRIVATE_KEY=${v}`]),
  ...each("der-pkcs8-ed25519", derKeys["pkcs8-ed25519"], [(v) => `ed25519: ${v}`, (v) => `"seed": "${v}",`]),
  ...each("der-encrypted-pkcs8", derKeys["encrypted-pkcs8"], [
    (v) => wrapped(v, 76, "\r\n", (body) => `key.enc=${body}\r\n`)
  ]),
  ...each("der-pkcs12", derKeys.pkcs12, [
    (v) => `az keyvault certificate import --vault-name kv --name web --file-content ${v}`,
    (v) => `{"certificate": {"data": "${v}", "password": ""}}`
  ]),
  ...each(
    "openssh-key-body",
    () => `b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW${chars(BASE64, 360)}`,
    [(v) => `SSH_KEY_B64=${v}`, (v) => `deploy_key: ${v}`]
  )
]

const genericValue = () => pick([password, () => `${chars(LOWER, 6)}${chars(DIGITS, 3)}`, () => token(12)])()
const genericNames = [
  ...each("yaml-generic-token", genericValue, [
    (v) => `auth:\n  token: ${v}`,
    (v) => `github:\n  api_token: ${v}\n  org: acme`,
    (v) => `- name: registry\n  credential: ${v}`,
    (v) => `oauth:\n  client_id: web-app\n  client_secret: ${v}`,
    (v) => `slack:\n  bot_token: "${v}"`,
    (v) => `secret: ${v}  # rotate quarterly`,
    (v) => `Token: ${v}`
  ]),
  ...each("hcl-generic-secret", genericValue, [
    (v) => `resource "vault_generic_secret" "x" {\n  secret = "${v}"\n}`,
    (v) => `  token   = "${v}"`,
    (v) => `provider "cloudflare" {\n  api_token = "${v}"\n}`,
    (v) => `client_secret = "${v}"`
  ]),
  ...each("toml-ini-generic", genericValue, [
    (v) => `[pypi]\ntoken = "${v}"`,
    (v) => `[default]\naws_session_token=${v}`,
    (v) => `[auth]\nsecret='${v}'`
  ]),
  ...each("dotenv-generic", genericValue, [
    (v) => `TOKEN=${v}`,
    (v) => `export API_TOKEN=${v}`,
    (v) => `SECRET=${v}`,
    (v) => `WEBHOOK_SECRET="${v}"`,
    (v) => `CREDENTIALS=${v}`,
    (v) => `set AUTH_TOKEN=${v}`,
    (v) => `  - "APP_SECRET=${v}"`
  ]),
  ...each("properties-password", password, [
    (v) => `spring.datasource.password=${v}`,
    (v) => `ansible_become_pass: ${v}`,
    (v) => `{"username": "admin", "password": "${v}"}`
  ]),
  ...each("yaml-password-bare-word", () => `${pick(words).toLowerCase()}${pick(words).toLowerCase()}`, [
    (v) => `spring:\n  datasource:\n    password: ${v}`,
    (v) => `DB_PASSWORD=${v}`
  ])
]

const vendors = [
  ...each("github-pat", () => `ghp_${token(36)}`, [
    (v) => `git remote set-url origin https://${v}@github.com/acme/app.git`,
    (v) => `  GH_TOKEN: ${v}`,
    (v) => `echo ${v} | gh auth login --with-token`
  ]),
  ...each("github-oauth", () => `gho_${token(36)}`, [(v) => `oauth_token: ${v}`]),
  ...each("github-fine-grained", () => `github_pat_11${chars(`${UPPER}${DIGITS}`, 20)}_${token(59)}`, [
    (v) => `{"token": "${v}"}`
  ]),
  ...each("gitlab-pat", () => `glpat-${chars(URLSAFE, 20)}`, [
    (v) => `curl --header "PRIVATE-TOKEN: ${v}" https://gitlab.example.com/api/v4/projects`,
    (v) => `[gitlab]\ntoken = ${v}`
  ]),
  ...each("slack-bot", () => `xoxb-${chars(DIGITS, 12)}-${chars(DIGITS, 13)}-${token(24)}`, [
    (v) => `SLACK_BOT_TOKEN=${v}`,
    (v) => `client = WebClient(token="${v}")`
  ]),
  ...each("stripe-secret", () => `sk_live_${token(99)}`, [
    (v) => `stripe.api_key = "${v}"`,
    (v) => `curl https://api.stripe.com/v1/charges -u ${v}:`
  ]),
  ...each("aws-key-pair", () => chars(BASE64, 40), [
    (v) => `[prod]\naws_access_key_id = AKIA${chars(`${UPPER}234567`, 16)}\naws_secret_access_key = ${v}`,
    (v) => `{"AccessKeyId": "ASIA${chars(UPPER, 16)}", "SecretAccessKey": "${v}", "SessionToken": "x"}`
  ]),
  ...each("aws-access-key-id", () => `AKIA${chars(`${UPPER}234567`, 16)}`, [
    (v) => `aws configure set aws_access_key_id ${v}`
  ]),
  ...each("google-api-key", () => `AIza${chars(URLSAFE, 35)}`, [
    (v) => `https://maps.googleapis.com/maps/api/geocode/json?address=x&key=${v}`
  ]),
  ...each("openai-key", () => `sk-proj-${chars(URLSAFE, 120)}`, [(v) => `OPENAI_API_KEY=${v}`]),
  ...each("anthropic-key", () => `sk-ant-api03-${chars(URLSAFE, 93)}AA`, [(v) => `-H "x-api-key: ${v}"`]),
  ...each("npm-token", () => `npm_${token(36)}`, [(v) => `//registry.npmjs.org/:_authToken=${v}`]),
  ...each("pypi-token", () => `pypi-AgEIcHlwaS5vcmc${chars(URLSAFE, 130)}`, [
    (v) => `twine upload -u __token__ -p ${v} dist/*`
  ]),
  ...each("sendgrid-key", () => `SG.${chars(URLSAFE, 22)}.${chars(URLSAFE, 43)}`, [(v) => `sendgrid_api_key: ${v}`]),
  ...each("twilio-auth-token", () => hex(32), [(v) => `TWILIO_AUTH_TOKEN=${v}`]),
  ...each("mailgun-key", () => `key-${hex(32)}`, [
    (v) => `curl -s --user 'api:${v}' https://api.mailgun.net/v3/x/messages`
  ]),
  ...each("digitalocean-token", () => `dop_v1_${hex(64)}`, [(v) => `doctl auth init --access-token ${v}`]),
  ...each("vault-token", () => `hvs.${chars(URLSAFE, 90)}`, [(v) => `X-Vault-Token: ${v}`]),
  ...each("databricks-token", () => `dapi${hex(32)}`, [(v) => `databricks configure --token <<< ${v}`]),
  ...each("heroku-key", () => `HRKU-AA${chars(URLSAFE, 58)}`, [
    (v) => `machine api.heroku.com\n  login a@b.c\n  password ${v}`
  ]),
  ...each("jwt", () => `eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI${token(60)}.${chars(URLSAFE, 86)}`, [
    (v) => `Cookie: session=${v}; Path=/`,
    (v) => `{"id_token": "${v}"}`
  ]),
  ...each("azure-storage-key", () => `${chars(BASE64, 86)}==`, [
    (v) => `DefaultEndpointsProtocol=https;AccountName=logs;AccountKey=${v};EndpointSuffix=core.windows.net`
  ]),
  ...each("azure-sas", () => `${chars(ALNUM, 43)}%3D`, [
    (v) => `https://acct.blob.core.windows.net/c/f.zip?sv=2022-11-02&se=2025-01-01&sr=b&sp=r&sig=${v}`
  ]),
  ...each("pem-key-block", () => `${wrap(chars(BASE64, 1600), 64, "\n")}\n${chars(BASE64, 20)}==`, [
    (v) => `-----BEGIN RSA PRIVATE KEY-----\n${v}\n-----END RSA PRIVATE KEY-----`
  ]),
  ...each("url-credentials", password, [
    (v) => `DATABASE_URL=postgres://app:${v}@pg.internal:5432/app`,
    (v) => `amqp://guest:${v}@rabbit:5672/`,
    (v) => `redis://:${v}@cache.internal:6379/0`,
    (v) => `mongodb+srv://svc:${v}@cluster0.abcde.mongodb.net/prod?retryWrites=true`
  ]),
  ...each("basic-auth-header", () => btoa(`svc:${password()}`), [(v) => `Authorization: Basic ${v}`]),
  ...each("bearer-token", () => `${token(40)}.${chars(URLSAFE, 20)}`, [(v) => `Authorization: Bearer ${v}`]),
  ...each("xml-password", password, [(v) => `<server><id>nexus</id><password>${v}</password></server>`]),
  ...each("k8s-env-value", password, [(v) => `env:\n  - name: POSTGRES_PASSWORD\n    value: "${v}"`]),
  ...each("cli-password-flag", password, [(v) => `psql-wrapper --password ${v} --host db`]),
  ...each("api-key-header", () => hex(32), [(v) => `X-Api-Key: ${v}`, (v) => `DD_API_KEY=${v}`]),
  ...each("session-uuid-secret", uuid, [(v) => `client_secret: ${v}`])
]

/** Every entry of the corpus. */
export const realFormatSecrets: ReadonlyArray<CorpusEntry> = [
  ...connectionStrings,
  ...curl,
  ...escapedEnv,
  ...cliPasswords,
  ...authorizationSchemes,
  ...docker,
  ...keys,
  ...genericNames,
  ...vendors
]
