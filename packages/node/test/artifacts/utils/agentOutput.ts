/**
 * Ordinary tool output an agent reads, none of it secret: build and install
 * logs, git output, cloud CLI JSON and YAML with pagination and idempotency
 * tokens (and the commands that page with them), lockfile integrity lines,
 * test runner output, `ls -l` listings, CSV, Kubernetes and Docker listings,
 * HTTP traces, model usage records, CI logs with masked values, and code.
 *
 * Lines are drawn by a seeded generator from templates of what these tools
 * print, so the corpus is the same on every run. Words like token, secret,
 * password and key occur on purpose, where they name no secret: a redactor
 * must leave them alone.
 */
import { ALNUM, BASE64, DIGITS, generator, HEX, LOWER, UPPER, URLSAFE } from "./ruleExamples.ts"

export interface OutputFamily {
  readonly name: string
  readonly lines: ReadonlyArray<string>
}

const seed = 0xa9e7f00d
// Drawn afresh on every call of `agentOutput`, so each call returns the same lines.
let g = generator(seed)
const chars = (charset: string, length: number) => g.chars(charset, length)
const pick = <A>(items: ReadonlyArray<A>): A => g.pick(items)

const uuid = () =>
  `${chars(HEX, 8)}-${chars(HEX, 4)}-4${chars(HEX, 3)}-${pick(["8", "9", "a", "b"])}${chars(HEX, 3)}-${chars(HEX, 12)}`
const sha = (length = 40) => chars(HEX, length)
const int = (max: number) => Math.floor(g.next() * max)
const time = (index: number) => new Date(Date.UTC(2024, 5, 3, 9) + index * 2_113).toISOString()
const pkg = () =>
  pick(["react", "lodash", "effect", "vitest", "typescript", "zod", "@types/node", "js-tokens", "esbuild", "rollup"])
const version = () => `${int(20)}.${int(30)}.${int(40)}`
const user = () => pick(["ann", "bob", "chen", "dara", "eli", "fatima"])
/** A pagination token as AWS CLIs print it: base64 of a small JSON state. */
const awsNextToken = () =>
  btoa(JSON.stringify({ NextToken: null, boto_truncate_amount: int(100), Marker: `${chars(LOWER, 6)}/${int(9999)}` }))
const opaqueToken = (length: number) => chars(ALNUM, length)

const repeat = (count: number, line: (index: number) => string | ReadonlyArray<string>): ReadonlyArray<string> =>
  Array.from({ length: count }, (_, index) => line(index)).flat()

const buildLogs = (): ReadonlyArray<string> =>
  repeat(700, (index) =>
    pick([
      () => `npm warn deprecated ${pkg()}@${version()}: This version is no longer supported`,
      () => `added ${int(900)} packages, and audited ${int(1200)} packages in ${int(40)}s`,
      () => `Progress: resolved ${int(900)}, reused ${int(800)}, downloaded ${int(50)}, added ${int(900)}, done`,
      () => `+ ${pkg()} ${version()}`,
      () => `vite v5.${int(5)}.${int(9)} building for production...`,
      () =>
        `dist/assets/index-${chars(`${ALNUM}_-`, 8)}.js   ${int(900)}.${int(99)} kB │ gzip: ${int(300)}.${int(99)} kB`,
      () => `src/auth/token.ts(${int(300)},${int(40)}): error TS2322: Type 'string' is not assignable to type 'Token'.`,
      () => `[${time(index)}] webpack 5.${int(90)}.0 compiled successfully in ${int(9000)} ms`,
      () => `   Compiling tokio v1.${int(40)}.${int(9)}`,
      () => `    Finished \`release\` profile [optimized] target(s) in ${int(300)}.${int(99)}s`,
      () => `go: downloading github.com/${user()}/secretsmanager v0.${int(20)}.${int(9)}`,
      () => `Successfully installed token-bucket-${version()} python-dotenv-${version()}`,
      () => `#${int(20)} [build ${int(9)}/${int(12)}] RUN pnpm install --frozen-lockfile`,
      () => `#${int(20)} DONE ${int(90)}.${int(9)}s`,
      () => `#${int(20)} exporting to image sha256:${sha(64)} done`,
      () => `Step ${int(12)}/12 : COPY --from=build /app/dist /srv  ---> ${sha(12)}`,
      () => `warning: unused variable: \`token\` --> src/auth.rs:${int(300)}:${int(40)}`,
      () => `INFO: Found ${int(40)} password strength rules, ${int(5)} disabled`
    ])()
  )

const gitOutput = (): ReadonlyArray<string> =>
  repeat(500, () =>
    pick([
      () =>
        `${sha(7)} ${pick(["Fix token refresh", "Rotate secrets reader", "Add password policy", "Bump deps", "Refactor key loader"])} (#${int(9000)})`,
      () => `commit ${sha()}`,
      () => `Author: ${user()} <${user()}@example.com>`,
      () =>
        ` src/auth/${pick(["token", "password", "secret", "session"])}.ts | ${int(90)} ${"+".repeat(int(20))}${"-".repeat(int(10))}`,
      () => ` ${int(40)} files changed, ${int(900)} insertions(+), ${int(400)} deletions(-)`,
      () => `\tmodified:   src/config/${pick(["secrets", "tokens", "credentials"])}.ts`,
      () => `* main ${sha(7)} [origin/main: ahead ${int(5)}] Merge pull request #${int(900)}`,
      () => `index ${sha(7)}..${sha(7)} 100644`,
      () => `@@ -${int(300)},${int(20)} +${int(300)},${int(20)} @@ export const readToken = (path: string) =>`,
      () => `-  const secret = process.env.API_SECRET`,
      () => `+  const secret = yield* Config.redacted("API_SECRET")`,
      () => `Merge: ${sha(7)} ${sha(7)}`,
      () => `From github.com:acme/app\n   ${sha(7)}..${sha(7)}  main       -> origin/main`
    ])()
  )

const cloudCli = (): ReadonlyArray<string> =>
  repeat(260, () =>
    pick([
      () => [
        `$ aws s3api list-objects-v2 --bucket logs-${chars(LOWER, 5)} --max-items 100 --starting-token ${awsNextToken()}`,
        "{",
        `    "Contents": [{"Key": "app/${uuid()}.gz", "Size": ${int(99999)}, "ETag": "\\"${sha(32)}\\""}],`,
        `    "NextToken": "${awsNextToken()}",`,
        `    "NextContinuationToken": "${chars(BASE64, 76)}=",`,
        `    "ContinuationToken": "${chars(BASE64, 76)}="`,
        "}"
      ],
      () => [
        `$ aws ec2 describe-instances --max-results 5 --next-token ${opaqueToken(120)}`,
        `{"Reservations": [], "NextToken": "${opaqueToken(120)}"}`
      ],
      () => [
        `$ aws logs get-log-events --log-group-name /ecs/api --log-stream-name s/${sha(32)} --next-token f/${chars(DIGITS, 56)}/s`,
        `    "nextForwardToken": "f/${chars(DIGITS, 56)}/s",`,
        `    "nextBackwardToken": "b/${chars(DIGITS, 56)}/s"`
      ],
      () => `$ aws dynamodb scan --table-name sessions --starting-token=${awsNextToken()} --max-items 25`,
      () => `$ aws s3api list-objects-v2 --bucket b --continuation-token ${chars(BASE64, 76)}=`,
      () => `$ aws ssm describe-parameters --next-token=${opaqueToken(80)}`,
      () =>
        `{"StackId": "arn:aws:cloudformation:eu-west-1:${chars(DIGITS, 12)}:stack/api/${uuid()}", "ClientRequestToken": "Console-CreateStack-${uuid()}"}`,
      () => `{"IdempotencyToken": "${uuid()}", "PaginationToken": "${opaqueToken(64)}"}`,
      () => `NextToken: ${awsNextToken()}`,
      () => `nextToken: ${opaqueToken(96)}`,
      () => `{"items": [], "nextPageToken": "${chars(URLSAFE, 48)}"}`,
      () => `$ gcloud compute instances list --page-token ${chars(URLSAFE, 48)} --format=json`,
      () =>
        `  "nextLink": "https://management.azure.com/subscriptions/${uuid()}/resources?api-version=2021-04-01&$skiptoken=${chars(URLSAFE, 80)}"`,
      () =>
        `{"value": [], "@odata.nextLink": "https://graph.microsoft.com/v1.0/users?$skiptoken=${chars(URLSAFE, 120)}"}`,
      () => `{"Parameter": {"Name": "/prod/api/token", "Type": "SecureString", "Version": ${int(9)}}}`,
      () =>
        `{"ARN": "arn:aws:secretsmanager:us-east-1:${chars(DIGITS, 12)}:secret:prod/db-${chars(ALNUM, 6)}", "Name": "prod/db"}`,
      () => `    "SecretString": "(hidden; use --query to print)",`,
      () =>
        `{"UserId": "AIDA${chars(UPPER, 17)}", "Account": "${chars(DIGITS, 12)}", "Arn": "arn:aws:iam::${chars(DIGITS, 12)}:user/ci"}`
    ])()
  )

const integrity = () => `sha512-${chars(BASE64, 86)}==`
const lockfiles = (): ReadonlyArray<string> =>
  repeat(700, () =>
    pick([
      () => {
        const name = pkg()
        const v = version()
        return [
          `    "node_modules/${name}": {`,
          `      "version": "${v}",`,
          `      "resolved": "https://registry.npmjs.org/${name}/-/${name.replace(/^@[^/]+\//, "")}-${v}.tgz",`,
          `      "integrity": "${integrity()}",`
        ]
      },
      () => `  /${pkg()}@${version()}:\n    resolution: {integrity: ${integrity()}}`,
      () => `  integrity ${integrity()}`,
      () => `  checksum: ${sha(128)}`,
      () => `"${pkg()}@^${version()}":\n  version "${version()}"`,
      () => `${pick(["requests", "urllib3", "certifi"])}==${version()} \\\n    --hash=sha256:${sha(64)}`,
      () => `github.com/${user()}/jwt-go v${version()} h1:${chars(BASE64, 43)}=`
    ])()
  )

const testRunner = (): ReadonlyArray<string> =>
  repeat(600, () =>
    pick([
      () => ` ✓ src/auth/token.test.ts > refreshes an expired token ${int(90)}ms`,
      () => ` ✓ rejects a password shorter than 12 characters (${int(9)} ms)`,
      () => ` × secret rotation > keeps the previous key for ${int(60)} minutes`,
      () => `PASSED tests/test_auth.py::test_password_reset_sends_email[${pick(["smtp", "ses"])}]`,
      () => `FAILED tests/test_tokens.py::test_token_expiry - AssertionError: assert 3600 == 7200`,
      () => `--- PASS: TestSecretLoader/${pick(["env", "file", "vault"])} (0.${chars(DIGITS, 2)}s)`,
      () =>
        `ok  \tgithub.com/acme/app/internal/credentials\t0.${chars(DIGITS, 3)}s\tcoverage: ${int(99)}.${int(9)}% of statements`,
      () => ` Test Files  ${int(40)} passed (${int(40)})`,
      () => `      Tests  ${int(900)} passed | ${int(4)} skipped (${int(900)})`,
      () => `   Duration  ${int(30)}.${int(99)}s (transform ${int(900)}ms, setup 0ms, collect ${int(9)}.${int(9)}s)`,
      () => `    expected 'Bearer' to equal 'Basic'`,
      () => `    at TokenService.verify (src/auth/token.ts:${int(300)}:${int(30)})`,
      () => `Tests:       ${int(9)} failed, ${int(400)} passed, ${int(409)} total`
    ])()
  )

const listings = (): ReadonlyArray<string> =>
  repeat(600, () =>
    pick([
      () =>
        `${pick(["-rw-r--r--", "-rw-------", "drwxr-xr-x", "-rwxr-xr-x"])}  1 ${user()}  staff  ${int(99999)} Jun  ${int(28) + 1} 10:${chars(DIGITS, 2)} ${pick(["id_ed25519.pub", "token.json", "secrets.yaml", "credentials.example", ".env.example", "README.md", "package.json", "known_hosts"])}`,
      () => `total ${int(9999)}`,
      () =>
        `${pick(["api", "worker", "web"])}-${chars(`${LOWER}${DIGITS}`, 10)}-${chars(`${LOWER}${DIGITS}`, 5)}   1/1     Running   0          ${int(30)}h`,
      () =>
        `${pick(["db-credentials", "api-token", "tls-secret", `default-token-${chars(`${LOWER}${DIGITS}`, 5)}`])}   ${pick(["Opaque", "kubernetes.io/tls", "kubernetes.io/service-account-token"])}   ${int(4)}      ${int(90)}d`,
      () =>
        `${pick(["ghcr.io/acme/api", "postgres", "redis"])}   ${pick(["latest", "16-alpine", version()])}   ${sha(12)}   ${int(9)} days ago   ${int(900)}MB`,
      () =>
        `${chars(HEX, 12)}   ${pick(["nginx:1.27", "api:dev"])}   "/docker-entrypoint.…"   ${int(9)} hours ago   Up ${int(9)} hours   0.0.0.0:${int(9000)}->80/tcp   web-${int(9)}`,
      () =>
        `${uuid()}  ${pick(["eu-west-1", "us-east-1"])}  ${pick(["running", "stopped"])}  t3.${pick(["micro", "large"])}`
    ])()
  )

const csv = (): ReadonlyArray<string> => [
  "id,user_id,email,created_at,token_count,max_tokens,amount,currency,status,sha",
  ...repeat(700, (index) =>
    [
      index + 1,
      uuid(),
      `${user()}${int(99)}@example.com`,
      time(index),
      int(9000),
      pick([512, 1024, 4096]),
      `${int(999)}.${chars(DIGITS, 2)}`,
      pick(["EUR", "USD"]),
      pick(["paid", "refunded", "pending"]),
      sha()
    ].join(",")
  )
]

const code = (): ReadonlyArray<string> =>
  repeat(500, () =>
    pick([
      () => `  const token = yield* TokenStore.get(${pick(["userId", "session.id", "request.user"])})`,
      () => `  if (token === undefined) return yield* new MissingToken({ userId })`,
      () => `  readonly password: Redacted.Redacted<string>`,
      () => `  password: string`,
      () => `  secret?: string`,
      () => `def rotate_secret(client, secret_id: str) -> None:`,
      () => `    token = session.get("token")`,
      () => `    tokens = tokenizer.encode(text)[:max_tokens]`,
      () => `max_tokens: ${pick([256, 512, 1024, 4096])}`,
      () => `token_limit: ${int(9000)}`,
      () => `secret: false`,
      () => `tokens: ${int(9000)}`,
      () => `      secretName: ${pick(["db-credentials", "api-token", "tls"])}`,
      () => `        - name: API_TOKEN\n          valueFrom:\n            secretKeyRef: {name: api, key: token}`,
      () => `          token: \${{ secrets.GITHUB_TOKEN }}`,
      () => `export function verifyPassword(hash: string, candidate: string): Promise<boolean> {`,
      () => `  return crypto.timingSafeEqual(Buffer.from(a), Buffer.from(b))`,
      () => `const keyId = "${uuid()}"`,
      () => `    assert token_count == ${int(900)}`
    ])()
  )

const httpAndModels = (): ReadonlyArray<string> =>
  repeat(500, (index) =>
    pick([
      () => `< HTTP/2 ${pick([200, 201, 304, 404])}`,
      () => `< etag: W/"${sha(32)}"`,
      () => `< x-amz-request-id: ${chars(`${UPPER}${DIGITS}`, 16)}`,
      () => `< x-ratelimit-remaining-tokens: ${int(90000)}`,
      () => `> User-Agent: curl/8.${int(9)}.0`,
      () => `> Accept: application/json`,
      () =>
        `{"id": "chatcmpl-${chars(ALNUM, 24)}", "usage": {"prompt_tokens": ${int(9000)}, "completion_tokens": ${int(900)}, "total_tokens": ${int(9900)}}}`,
      () =>
        `{"model": "claude-sonnet-4", "max_tokens": ${pick([1024, 4096])}, "stop_reason": "end_turn", "usage": {"input_tokens": ${int(900)}, "output_tokens": ${int(900)}}}`,
      () => `${time(index)} INFO request_id=${uuid()} method=GET path=/v1/tokens status=200 duration_ms=${int(900)}`,
      () => `${time(index)} WARN auth: password rejected for user=${user()} reason=too_short`
    ])()
  )

const ciLogs = (): ReadonlyArray<string> =>
  repeat(300, (index) =>
    pick([
      () => `##[group]Run actions/checkout@v4`,
      () => `  with:\n    token: ***\n    ssh-strict: true\n    persist-credentials: true`,
      () => `  env:\n    NODE_AUTH_TOKEN: ***`,
      () => `##[endgroup]`,
      () => `${time(index)} Syncing repository: acme/app`,
      () =>
        `${time(index)} [command]/usr/bin/git config --local http.https://github.com/.extraheader AUTHORIZATION: basic ***`,
      () => `  + password                        = (sensitive value)`,
      () => `  ~ token                           = (sensitive value)`,
      () => `Plan: ${int(9)} to add, ${int(9)} to change, ${int(9)} to destroy.`,
      () => `  - Token: gho_************************************`,
      () => `  - Token scopes: 'gist', 'read:org', 'repo', 'workflow'`
    ])()
  )

/** Every family of the corpus. */
export const agentOutput = (): ReadonlyArray<OutputFamily> => {
  g = generator(seed)
  return [
    { name: "build and install logs", lines: buildLogs() },
    { name: "git output", lines: gitOutput() },
    { name: "cloud CLI output with pagination tokens", lines: cloudCli() },
    { name: "lockfile integrity lines", lines: lockfiles() },
    { name: "test runner output", lines: testRunner() },
    { name: "ls -l, kubectl and docker listings", lines: listings() },
    { name: "CSV", lines: csv() },
    { name: "code and config", lines: code() },
    { name: "HTTP traces and model usage", lines: httpAndModels() },
    { name: "CI logs with masked values", lines: ciLogs() }
  ].map((family) => ({ ...family, lines: family.lines.flatMap((line) => line.split("\n")) }))
}
