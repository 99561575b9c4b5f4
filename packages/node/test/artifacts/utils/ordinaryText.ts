/**
 * Ordinary text for measuring false positives: source code, type
 * declarations, prose, a lockfile (all read from this repository and its
 * pinned dependencies), and generated logs, UUIDs, git SHAs, git output,
 * base64 images, agent tool output (`agentOutput.ts`) and lines where a
 * secret-like name holds no secret (pagination tokens, counters, settings,
 * references, placeholders), all seeded, so the same on every run.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { agentOutput } from "./agentOutput.ts"
import { ALNUM, BASE64, DIGITS, generator, HEX, LOWER } from "./ruleExamples.ts"

const root = fileURLToPath(new URL("../../../../..", import.meta.url))

export interface Document {
  readonly name: string
  readonly text: string
}

const filesIn = (folder: string, suffix: string): ReadonlyArray<string> =>
  fs
    .readdirSync(path.join(root, folder))
    .filter((name) => name.endsWith(suffix))
    .sort()
    .map((name) => `${folder}/${name}`)

/** Files of this repository and of its pinned dependencies (the lockfile fixes their versions). */
const files = (): ReadonlyArray<string> => [
  ...filesIn("node_modules/effect/src", ".ts"),
  "node_modules/typescript/lib/lib.es5.d.ts",
  "node_modules/typescript/lib/lib.dom.d.ts",
  ...filesIn("node_modules/@types/node", ".d.ts"),
  // The security model is left out: it quotes example credentials on purpose, to show what is redacted.
  ...filesIn("docs", ".md").filter((name) => name !== "docs/security-model.md"),
  "README.md",
  "pnpm-lock.yaml"
]

const g = generator(0x0d1a7e57)
const { chars, pick } = g
const uuid = () =>
  `${chars(HEX, 8)}-${chars(HEX, 4)}-4${chars(HEX, 3)}-${pick(["8", "9", "a", "b"])}${chars(HEX, 3)}-${chars(HEX, 12)}`
const sha = () => chars(HEX, 40)
const ip = () => `10.${chars(DIGITS, 1)}.${Number(chars(DIGITS, 2))}.${Number(chars(DIGITS, 2))}`
const time = (index: number) => new Date(Date.UTC(2024, 4, 1, 10) + index * 1_337).toISOString()
const user = () => pick(["ann", "bob", "chen", "dara", "eli"])

const logLine = (index: number): string =>
  pick([
    () => `${time(index)} INFO  [req=${uuid()}] GET /api/v1/users/${chars(DIGITS, 5)} 200 ${chars(DIGITS, 2)}ms`,
    () =>
      `{"level":"info","ts":${1714557600 + index}.${chars(DIGITS, 3)},"trace_id":"${chars(HEX, 32)}","span_id":"${chars(HEX, 16)}","msg":"request completed","status":200,"duration_ms":${chars(DIGITS, 2)}.${chars(DIGITS, 1)},"token_count":${chars(DIGITS, 3)},"max_tokens":4096,"user_id":"${uuid()}"}`,
    () =>
      `${ip()} - - [01/May/2024:10:00:${chars(DIGITS, 2)} +0000] "GET /login?next=%2Fhome HTTP/1.1" 302 0 "-" "curl/8.5.0"`,
    () => `${time(index)} WARN  invalid password for user ${user()} (attempt ${chars("123", 1)} of 5)`,
    () => `${time(index)} INFO  password reset email sent to ${user()}@example.com`,
    () => `${time(index)} DEBUG token refreshed for session ${uuid()}, expires in 3600s`,
    () => `${time(index)} INFO  secret rotation scheduled for key ${uuid()} (no value logged)`,
    () =>
      `pod/api-${chars(`${LOWER}${DIGITS}`, 9)}-${chars(`${LOWER}${DIGITS}`, 5)}   1/1   Running   0   3h${chars(DIGITS, 2)}m`,
    () =>
      `    at Object.<anonymous> (/app/src/handlers/${pick(["auth", "users", "billing"])}.js:${chars(DIGITS, 3)}:${chars(DIGITS, 2)})`,
    () => `Step ${chars("123456789", 1)}/9 : RUN npm ci --omit=dev  ---> ${chars(HEX, 12)}`,
    () => `sha256:${chars(HEX, 64)}  dist/app-${chars(HEX, 8)}.js`,
    () =>
      `${time(index)} INFO  uploaded ${chars(DIGITS, 6)} bytes to s3://logs-bucket/${uuid()}.gz etag="${chars(HEX, 32)}"`,
    () =>
      `E0501 10:00:${chars(DIGITS, 2)}.${chars(DIGITS, 6)} 1 reflector.go:${chars(DIGITS, 3)}] failed to list *v1.Secret: secrets is forbidden`,
    () => `${time(index)} INFO  user ${user()} logged in from ${ip()} (mfa=true, session=${uuid()})`,
    () => `checkout ${sha()} -> detached HEAD; ${chars(DIGITS, 4)} files changed, ${chars(DIGITS, 3)} insertions(+)`
  ])()

const gitLog = (count: number): string =>
  Array.from(
    { length: count },
    () =>
      `commit ${sha()}\nAuthor: ${user()} <${user()}@example.com>\nDate:   Wed May 1 10:00:00 2024 +0000\n\n    ${pick(["Fix token refresh race", "Rotate the signing key reader", "Add password strength meter", "Bump deps"])}\n\ndiff --git a/src/a.ts b/src/a.ts\nindex ${chars(HEX, 7)}..${chars(HEX, 7)} 100644\n@@ -1,3 +1,3 @@\n-const retries = 3\n+const retries = 5\n`
  ).join("\n")

/** A PNG signature and random bytes, base64-encoded: an image as it appears in HTML, Markdown or MIME. */
const base64Image = (bytes: number): string => {
  const data = `iVBORw0KGgoAAAANSUhEUgAA${chars(BASE64, Math.ceil((bytes * 4) / 3))}`
  return [
    `<img alt="chart" src="data:image/png;base64,${data}">`,
    `![diagram](data:image/png;base64,${data})`,
    `Content-Type: image/png\nContent-Transfer-Encoding: base64\n\n${data.match(/.{1,76}/g)?.join("\n") ?? ""}`
  ].join("\n")
}

const generated = (): ReadonlyArray<Document> => [
  {
    name: "generated: application logs",
    text: Array.from({ length: 20_000 }, (_, index) => logLine(index)).join("\n")
  },
  { name: "generated: git log with diffs", text: gitLog(1_000) },
  {
    name: "generated: UUIDs and git SHAs",
    text: Array.from({ length: 5_000 }, () => `${uuid()} ${sha()} ${chars(ALNUM, 7)}`).join("\n")
  },
  { name: "generated: base64 images", text: Array.from({ length: 60 }, () => base64Image(3_000)).join("\n") },
  { name: "generated: names that hold no secret", text: notSecrets(3_000) },
  ...agentOutput().map((family) => ({ name: `generated: agent output, ${family.name}`, text: family.lines.join("\n") }))
]

/**
 * Lines where a secret-like name holds no secret: the false-positive families
 * the rules exclude on purpose (pagination and idempotency tokens of cloud
 * CLIs, counters and counting names, settings, references, masks,
 * placeholders, names of secrets, types), each with fresh values.
 */
const notSecrets = (count: number): string =>
  Array.from({ length: count }, () =>
    pick([
      () =>
        `aws s3api list-objects-v2 --bucket b --starting-token ${btoa(`{"NextToken": null, "n": ${chars(DIGITS, 3)}}`)}`,
      () => `aws ec2 describe-instances --next-token ${chars(ALNUM, 96)}`,
      () => `aws s3api list-objects-v2 --continuation-token=${chars(BASE64, 76)}=`,
      () => `gcloud compute instances list --page-token=${chars(ALNUM, 40)}`,
      () => `    "NextToken": "${chars(ALNUM, 120)}",`,
      () => `{"nextToken": "${chars(ALNUM, 64)}", "items": []}`,
      () => `NextToken: ${chars(ALNUM, 80)}`,
      () => `    "nextForwardToken": "f/${chars(DIGITS, 56)}/s",`,
      () => `token: ${chars(DIGITS, 1)}`,
      () => `tokens: ${chars(DIGITS, 4)}`,
      () => `max_tokens: ${pick(["256", "512", "4096"])}`,
      () => `token_count: ${chars(DIGITS, 3)}`,
      () => `secret: ${pick(["false", "true", "null", "off"])}`,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell reference, not a template
      () => `token: ${pick(["${TOKEN}", "<token>", "***", "$API_TOKEN", "changeme"])}`,
      () => `  secretName: ${pick(["db-credentials", "api-token"])}`,
      () => `existingSecret: ${pick(["postgres-creds", "redis-auth"])}`,
      () => `  privateKey: ${pick(["Buffer", "KeyObject", "Uint8Array"])}`,
      () => `{"ARN": "arn:aws:secretsmanager:eu-west-1:${chars(DIGITS, 12)}:secret:prod/db-${chars(ALNUM, 6)}"}`
    ])()
  ).join("\n")

/** Every document of the corpus. */
export const ordinaryText = (): ReadonlyArray<Document> => [
  ...files().map((name) => ({ name, text: fs.readFileSync(path.join(root, name), "utf8") })),
  ...generated()
]
