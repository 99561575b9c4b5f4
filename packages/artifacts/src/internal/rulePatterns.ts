/**
 * The vocabulary the default redaction rules are written in (`secretRules.ts`
 * holds the rules): boundaries, the forms of an assigned value, a command
 * line's arguments, wrapped base64, and the combinators that compose them
 * into whole patterns. Each piece is a pattern fragment; the rules that use
 * one share its meaning, so a fix to one form fixes every rule that reads it.
 *
 * Named groups inside a fragment are named after the secret group they
 * belong to (`secret2_quote` for the quote around `secret2`), so fragments
 * composed into one pattern never share a name.
 */
import { type ConfigForm, configLiteral, looksGenerated, notALiteral, typeName } from "./secretChecks.ts"

/** The fields of `DefaultRedactor.RedactionRule`, repeated here so this module does not import its user. */
export interface RuleData {
  readonly name: string
  readonly description: string
  readonly pattern: string
  readonly flags?: string
  readonly maxLength: number
  readonly maxLookbehind?: number
  readonly verify?: (secret: string, group: string) => boolean
}

/** Patterns are written raw: every backslash in one is the regular expression's. */
export const r = String.raw

/** Not followed by a character of a token's own charset. */
export const end = r`(?![A-Za-z0-9_-])`

/**
 * A prefixed token: `prefix` (never empty) then `body`, bounded on both
 * sides. The check that no token character precedes the prefix is a
 * lookbehind placed after the prefix, so the combined scan only stops where
 * the prefix occurs. A rule that also checks the value spreads this and adds
 * its `verify`.
 */
export const prefixed = (
  name: string,
  description: string,
  prefix: string,
  body: string,
  maxLength: number
): RuleData => ({
  name,
  description,
  pattern: `${prefix}(?<=(?<![A-Za-z0-9_-])${prefix})${body}${end}`,
  maxLength: maxLength + 1
})

// ---------------------------------------------------------------------------
// Assignments: a secret-like name, any operator, any quoting.

/**
 * A `\n`, `\r`, `\t` or quote escape of JSON-escaped text, also escaped
 * again (`\\n` in a JSON string inside a JSON string).
 */
export const jsonEscape = r`\\{1,8}[nrt"'\x60]`
/** Backslashes that are part of a value: a run not followed by an escape's letter or quote. */
export const literalBackslashes = r`\\{1,8}(?![nrt"'\x60\\])`
/**
 * One character of an unquoted value: not whitespace, a quote or a
 * separator, and not the backslash of an {@link jsonEscape}, so in JSON-escaped
 * text (a .env file inside a JSON string) a value ends where its line does
 * and the next line's assignment is seen.
 */
const bareChar = r`(?:[^\s"'\x60,;&<>(){}\[\]\\]|${literalBackslashes}|&(?![\w.-]{1,64}=))`
/** What may follow an unquoted value: whitespace, a quote, a separator, an escape, the end. */
export const bareEnd = r`(?=[\s"'\x60,;&<>)}\]]|${jsonEscape}|$)`

/**
 * The three forms of a value, with the names of their groups (distinct when
 * one pattern holds several; each quote's group is named after its value's);
 * `end` is what must follow an unquoted one.
 */
const valueForms = (escaped: string, quoted: string, bare: string, end: string) =>
  r`(?:\\(?<${escaped}_quote>["'])(?<${escaped}>(?:(?!\\\k<${escaped}_quote>)[^\n\r]){1,512})\\\k<${escaped}_quote>|(?<${quoted}_quote>["'\x60])(?<${quoted}>(?:(?!\k<${quoted}_quote>)[^\n\r\\]|\\[^\n\r]){1,512})\k<${quoted}_quote>|(?<${bare}>(?![-'"\x60])${bareChar}{1,512})${end})`

/**
 * The value after an operator: JSON-escaped quotes (`\"pw\"`), plain quotes
 * (any of `"`, `'`, `` ` ``, up to the same quote, backslash escapes
 * allowed), or an unquoted run that ends at whitespace, a quote, a
 * separator or a JSON escape (a `&` only when another `name=` follows, as in
 * a query string).
 */
export const assignedValue = valueForms("secret2", "secret", "secret3", bareEnd)

/** The end of a name: the closing quote of a quoted key (maybe JSON-escaped), an index bracket. */
const nameEnd = r`(?![\w-]|\.\w)(?:\\?["'\x60])?\]?`
const operator = r`[ \t]{0,8}(?::=|\?=|\+=|=>|=(?!=)|:(?!:))[ \t]{0,8}`
/**
 * Not a name inside a URL's user info (`https://x-access-token:...@host`):
 * `url-credentials` covers those up to the `@`. A `;`, `?` or `&` between
 * the `://` and the name ends any user info: in
 * `jdbc:sqlserver://h:1433;user=u;password=...` the name is a property of
 * the connection string.
 */
const notInUserInfo = r`(?<!://[^\s/@;?&]{0,64})`
/**
 * Not the resource type of an ARN (`arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf`):
 * what follows is the resource's name, printed by every AWS CLI call that touches it.
 */
const notInArn = r`(?<!\barn:[\w-]{1,32}:[\w-]{1,64}:[\w-]{0,32}:[0-9]{0,12}:[\w.-]{0,64})`

export const assignment = (
  name: string,
  description: string,
  names: string,
  verify: (value: string, group: string) => boolean
): RuleData => ({
  name,
  description,
  pattern: `(?:${names})${nameEnd}${notInUserInfo}${notInArn}${operator}${assignedValue}`,
  flags: "i",
  maxLength: 1100,
  // The user-info check reads `://` and up to 64 characters before the operator, the ARN check up to 212.
  maxLookbehind: 220,
  verify
})

/**
 * Each name starts with its keyword (any prefix may come before it, `DB_`,
 * `MYSQL_ROOT_`, `openai.`), so the combined scan stops only where a keyword
 * occurs; what must or must not precede the keyword is a lookbehind after it.
 */
export const passwordNames = r`passw(?:or)?d|passphrase|pwd(?<![a-z]pwd)|pass(?<=\w[_.-]pass)`
/**
 * Tokens that are not credentials: a model's special tokens and a cloud
 * API's pagination and idempotency tokens (`NextToken`, `--starting-token`,
 * `nextForwardToken`, `$skiptoken`): redacting those breaks an agent paging
 * through a CLI's output.
 */
export const notCredentialTokens = r`(?:eos|bos|pad|unk|sep|cls|mask|max|next|page|pagination|continuation|starting|start|resume|resumption|forward|backward|skip|sync|cancellation|idempotency|request)`
export const secretNames = r`token(?<!${notCredentialTokens}[_.-]?token)|secret|credentials?|key(?:[_.-]?base)?(?<=(?:api|access|secret|private|signing|encryption|master|auth|client|app|account|service|session)[_.-]?key(?:[_.-]?base)?)`

export const passwordValue = (value: string, group: string) => !notALiteral(value, group !== "secret3")
export const generatedValue = (value: string, group: string) =>
  !notALiteral(value, group !== "secret3") && looksGenerated(value) && !(group === "secret3" && typeName(value))

/** A line break inside wrapped base64: a newline and its indentation, or a JSON-escaped newline. */
const base64Break = r`(?:\r?\n[ \t]{0,16}|(?:\\r)?\\n)`
/**
 * Base64 wrapped at `width` columns whose first line has `first` more
 * characters; its last line must end its line (the word on the line after
 * a block, `cert:`, is not taken for the block's last line).
 */
const wrappedBase64 = (first: number, width: number) =>
  r`[A-Za-z0-9+/]{${first}}${base64Break}(?:[A-Za-z0-9+/]{${width}}${base64Break}){0,199}[A-Za-z0-9+/]{1,${width}}={0,2}(?=[ \t]{0,16}(?:[\r\n"'\\,\]}]|$))`
/** After a base64 key's opening: one long line, or lines wrapped at 64 (PEM) or 76 (MIME) columns. */
export const base64Body = (opening: number) =>
  r`(?:${wrappedBase64(64 - opening, 64)}|${wrappedBase64(76 - opening, 76)}|[A-Za-z0-9+/]{${60 - opening},12000}={0,2}(?![A-Za-z0-9+/=]))`

/** An Authorization header's credential: a token68 or similar run, bounded. */
export const credential = r`[A-Za-z0-9._~+/:-]{8,1024}={0,8}(?![A-Za-z0-9._~+/:=-])`

export const netrcOrFlagValue = r`(?<secret>(?![-"'])[^\s"']{1,256})`

/**
 * A command-line argument: quoted (spaces allowed inside) or a bare run that
 * ends at whitespace or an escape; the quote's group is named after the
 * quoted value's.
 */
export const argument = (quoted: string, bare: string) =>
  r`(?:(?<${quoted}_quote>["'])(?<${quoted}>(?:(?!\k<${quoted}_quote>)[^\n\r]){1,256})\k<${quoted}_quote>|(?<${bare}>(?![-\s"'])(?:[^\s"'\\]|${literalBackslashes}){1,256}))`
/** Arguments of a command before the option that matters, which they are not (`(?!-p)`). */
export const argumentsBefore = (option: string, count: number) =>
  r`(?:[ \t]{1,8}(?!${option})[^\s|;&<>]{1,256}){0,${count}}?`

/**
 * The start of a line, also one inside JSON-escaped text or at the start of
 * a JSON string (`{"env": "TOKEN=...\n..."}`), with what may open an
 * assignment there: a YAML list's dash, a quote (`- "SECRET=..."` in a
 * Compose file), `export` and its kin.
 */
const lineStart = r`(?:(?:^|[\r\n]|\\[nrt])[ \t]{0,32}(?:-[ \t]{1,8})?["']?|[:=,\[][ \t]{0,8}\\?["'])(?:(?:export|set|env|arg|declare[ \t]{1,8}-x)[ \t]{1,8})?`
/**
 * What may follow a value assigned at the start of a line: the end of the
 * line, a comment, a closing quote, and after ` = ` a `;` (YAML lines never
 * end with one; `password: URLPatternComponentResult;` is a declaration).
 */
export const lineEnd = (semicolon: boolean) =>
  r`(?=[ \t]{0,64}(?:[#\r\n"'\x60${semicolon ? ";" : ""}]|${jsonEscape}|$))`
/**
 * What may follow an unquoted value after `NAME=` (.env, shell): whitespace,
 * a quote, a `;` or `&` (a shell command goes on), an escape, the end; not a
 * bracket, so `SECRET_KEY=os.getenv("KEY")` is a call, not a value.
 */
export const envEnd = r`(?=[\s"'\x60;&]|${jsonEscape}|$)`
/** The unquoted value's group of each form of {@link configAssignment}; every other group holds a quoted value. */
const unquotedForms: ReadonlyMap<string, ConfigForm> = new Map([
  ["secret3", "env"],
  ["secret6", "yaml"],
  ["secret9", "spaced"]
])
/**
 * A config line's assignment: `NAME=value` (.env, shell; a bare word is a
 * literal), `name: value` (YAML) and `name = value` (HCL, TOML, INI), each
 * with its own groups so the check knows which form it has.
 */
export const configAssignment = r`(?:${passwordNames}|${secretNames})(?<!existing[_.-]?secret)(?![\w-]|\.\w)(?<=${lineStart}[\w.-]{1,96})(?:=(?![=\s])${valueForms("secret2", "secret", "secret3", envEnd)}|:[ \t]{1,8}${valueForms("secret5", "secret4", "secret6", "")}${lineEnd(false)}|(?:[ \t]{1,8}=[ \t]{0,8}|=[ \t]{1,8})(?!=)${valueForms("secret8", "secret7", "secret9", "")}${lineEnd(true)})`

/** The check of a {@link configAssignment} match: whether its value, in the form its group says, is a literal. */
export const configValue = (value: string, group: string): boolean =>
  configLiteral(value, unquotedForms.get(group) ?? "quoted")
