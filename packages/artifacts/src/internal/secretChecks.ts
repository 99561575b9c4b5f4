/**
 * Checks a rule runs on a candidate secret after its pattern matched. They
 * exist for what a pattern cannot say: a checksum, the decoded form of a
 * value, or that a value assigned to a secret-like name is a literal and not
 * a reference, a type or a placeholder.
 */

/** Shannon entropy in bits per character. */
export const entropy = (value: string): number => {
  const counts = new Map<string, number>()
  for (const char of value) counts.set(char, (counts.get(char) ?? 0) + 1)
  let bits = 0
  const length = [...value].length
  for (const count of counts.values()) {
    const p = count / length
    bits -= p * Math.log2(p)
  }
  return bits
}

/** The Luhn checksum of a card number (digits only). */
export const luhn = (digits: string): boolean => {
  let sum = 0
  for (let index = 0; index < digits.length; index++) {
    let digit = digits.charCodeAt(digits.length - 1 - index) - 48
    if (digit < 0 || digit > 9) return false
    if (index % 2 === 1) {
      digit *= 2
      if (digit > 9) digit -= 9
    }
    sum += digit
  }
  return sum % 10 === 0
}

/** Whether `value` is the base64 of printable `user:password` credentials (HTTP Basic, Docker's `auth`). */
export const basicCredentials = (value: string): boolean => {
  if (value.length % 4 !== 0) return false
  let decoded: string
  try {
    decoded = atob(value)
  } catch {
    return false
  }
  const colon = decoded.indexOf(":")
  return colon > 0 && colon < decoded.length - 1 && /^[\x20-\x7e]+$/.test(decoded)
}

/** Words that, as a whole value, are a type, a keyword or a mask rather than a secret. */
const notSecrets = new Set([
  "true",
  "false",
  "null",
  "nil",
  "none",
  "undefined",
  "empty",
  "required",
  "optional",
  "string",
  "str",
  "text",
  "int",
  "integer",
  "number",
  "bool",
  "boolean",
  "bytes",
  "object",
  "any",
  "unknown",
  "secretstr",
  "redacted",
  "hidden",
  "masked",
  "omitted",
  "changeit-placeholder"
])

const reference =
  /^(?:\$|%[A-Za-z_]\w*%|\{\{|<[^>]*>$|#\{|!(?:Ref|Sub|GetAtt|vault)\b|@Value|(?:process\.env|os\.environ|os\.getenv|getenv|env|ENV|secrets|vars|config|settings|self|this|ctx|context|params|args|options|opts|props)[.[(])/
const masked = /^(?:[*xX•.#_-]{3,}|\[REDACTED[^\]]*\]|your[_-][\w-]*|<.*)$/
const identifierPath = /^[A-Za-z_$][A-Za-z_$]*(?:\.[A-Za-z_$][A-Za-z_$]*)*$/

/** A value that is a reference, a type, a keyword or a mask, not a literal secret. */
export const notALiteral = (value: string, quoted: boolean): boolean => {
  if (reference.test(value) || masked.test(value) || notSecrets.has(value.toLowerCase())) return true
  // A path with two or more folders is a file's location (`"PWD": "/Users/ann"`).
  if (/^(?:~|\.{1,2})?\/[^/\s]+\//.test(value)) return true
  // Unquoted, a bare identifier or member path (no digit, no symbol) is code (`password = user.password`),
  // a hexadecimal literal is a constant (`STENCIL_PASS_DEPTH_PASS: 0x0B96`), and so is a path.
  return !quoted && (identifierPath.test(value) || /^0x[0-9a-f]+$/i.test(value) || /^(?:~|\.{1,2})?\//.test(value))
}

/**
 * A type's name, made of capitalized words (`Uint8Array`, `KeyObject`, `URLSearchParams`): in
 * `privateKey: Uint8Array` a declaration, not a value. Generated values do not read as words.
 */
export const typeName = (value: string): boolean => /^(?:[A-Z]{1,4}[a-z]{2,}[0-9]{0,2}){2,}$/.test(value)

/** A value that looks generated: long enough, varied, and not a plain word or number. */
export const looksGenerated = (value: string): boolean => {
  if (value.length < 8 || /^\d+$/.test(value) || /^[a-z]+$/i.test(value)) return false
  // Lower case with separators is a name (`my-app-secret`); generated values mix letters and digits or cases.
  const classes = Number(/[a-z]/.test(value)) + Number(/[A-Z]/.test(value)) + Number(/\d/.test(value))
  return classes >= 2 && entropy(value) >= 2.8
}

/** Whether `value` is the base64 of a Docker config (`{"auths": ...}` or the older `.dockercfg` map) holding an `auth`. */
export const dockerConfigJson = (value: string): boolean => {
  let decoded: string
  try {
    decoded = atob(value)
  } catch {
    return false
  }
  return /^\s*\{/.test(decoded) && /"auths?"\s*:/.test(decoded)
}

const base64Bytes = (base64: string): Uint8Array | undefined => {
  try {
    return Uint8Array.from(atob(base64), (char) => char.charCodeAt(0))
  } catch {
    return undefined
  }
}

/** The offset after a DER length at `at`, or -1 for a length form no key uses. */
const afterLength = (bytes: Uint8Array, at: number): number => {
  const first = bytes[at] ?? 0xff
  if (first < 0x80) return at + 1
  return first >= 0x81 && first <= 0x83 ? at + 1 + (first - 0x80) : -1
}

/** The OID arcs of PKCS#5 (1.2.840.113549.1.5) and PKCS#12 PBE (1.2.840.113549.1.12.1) schemes, DER-encoded. */
const pkcs5 = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x05]
const pkcs12Pbe = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x0c, 0x01]
const startsWithAt = (bytes: Uint8Array, at: number, prefix: ReadonlyArray<number>) =>
  prefix.every((byte, index) => bytes[at + index] === byte)

/**
 * Whether `value` (base64, maybe wrapped across lines or with JSON-escaped
 * newlines) is a private key outside PEM armour, decided by its decoded
 * structure, not by its look: an OpenSSH key body (`openssh-key-v1`), or a
 * DER SEQUENCE that opens like a private key. Those openings are
 * `INTEGER 0` then an AlgorithmIdentifier (PKCS#8) or an INTEGER (PKCS#1
 * RSA, DSA); `INTEGER 1` then a 24 to 66 byte OCTET STRING (SEC1 EC) or an
 * AlgorithmIdentifier (PKCS#8 v2); `INTEGER 3` then a SEQUENCE (PKCS#12);
 * or an AlgorithmIdentifier naming a PKCS#5 or PKCS#12 password-based
 * scheme (encrypted PKCS#8). Certificates, public keys,
 * signing requests and other DER open differently, and random base64
 * (images, hashes) matches one of these openings with a chance below 2^-40.
 */
export const privateKeyBase64 = (value: string): boolean => {
  const compact = value.replace(/\\[rn]|\s/g, "")
  if (compact.startsWith("b3BlbnNzaC1rZXktdjE")) return compact.length >= 100
  if (compact.length < 60) return false
  const bytes = base64Bytes(compact.slice(0, 32))
  if (bytes === undefined || bytes[0] !== 0x30) return false
  const body = afterLength(bytes, 1)
  if (body < 0) return false
  if (bytes[body] === 0x02 && bytes[body + 1] === 0x01) {
    const version = bytes[body + 2]
    const next = bytes[body + 3]
    const octets = bytes[body + 4] ?? 0
    if (version === 0) return next === 0x30 || next === 0x02
    if (version === 1) return next === 0x30 || (next === 0x04 && octets >= 24 && octets <= 66)
    return version === 3 && next === 0x30
  }
  // EncryptedPrivateKeyInfo: SEQUENCE { AlgorithmIdentifier { OID, parameters }, OCTET STRING }.
  if (bytes[body] !== 0x30) return false
  const oid = afterLength(bytes, body + 1)
  if (oid < 0 || bytes[oid] !== 0x06) return false
  return startsWithAt(bytes, oid + 2, pkcs5) || startsWithAt(bytes, oid + 2, pkcs12Pbe)
}

/** Words a config value takes that are a setting, not a secret (YAML booleans, fetch's `credentials` modes). */
const settingWords = new Set([
  "yes",
  "on",
  "off",
  "enabled",
  "disabled",
  "auto",
  "default",
  "inherit",
  "include",
  "omit",
  "same-origin"
])
const placeholder =
  /^(?:todo|tbd|fixme|changeme|change[_-]?(?:me|this|it)|replace[_-]?(?:me|this)|placeholder|example|sample|dummy|fake|n\/a|x{3,}|\.{3,})$/i
/** A value that names a secret (`secretName: db-secret`, `token: accessToken`) rather than being one. */
const namesASecret = /token|secret|passw|credential|api[_-]?key|private[_-]?key|access[_-]?key/i
/**
 * A type annotation or a member path, as in `privateKey: Buffer`,
 * `token: Uint8Array` or `secret: Schema.String` in code: a capitalized word,
 * an identifier with an inner capital, or a dotted path of identifiers.
 */
const typeLike = /^(?:[A-Z][A-Za-z]*|[A-Z]\w*[a-z0-9][A-Z]\w*|[A-Za-z_$][A-Za-z_$]*(?:\.[A-Za-z_$][A-Za-z_$]*)+)$/

/**
 * How a value was written in a line-start assignment: quoted, unquoted after
 * `NAME=` (a .env or shell line: a bare word is a literal), unquoted after
 * `name: ` (YAML, but also a type annotation or an object field in code),
 * or unquoted after ` = ` (HCL, TOML, INI, but also an assignment in code).
 */
export type ConfigForm = "quoted" | "env" | "yaml" | "spaced"

/**
 * Whether a value assigned at the start of a line to a secret-like name is a
 * literal secret: not a reference, a type, a keyword, a mask or a
 * placeholder (`${TOKEN}`, `<token>`, `***`, `gho_****`, `changeme`), not a
 * number or a count (`token: 5`), not a setting (`secret: false`, `off`),
 * not the name of a secret (`secretName: my-app-secret`), not one character
 * repeated, at least three characters with a letter; unquoted after ` = `
 * not an identifier, after `: ` not a type.
 */
export const configLiteral = (value: string, form: ConfigForm): boolean => {
  if (notALiteral(value, form !== "spaced")) return false
  if ([...value].length < 3 || !/\p{L}/u.test(value)) return false
  if (/\*{3,}|•{3,}/.test(value) || namesASecret.test(value) || placeholder.test(value)) return false
  // One character repeated (`aaaaaaaa`, `0000`) is a filler.
  if (settingWords.has(value.toLowerCase()) || /^(.)\1*$/su.test(value)) return false
  // Unquoted YAML cannot start with these (anchors, aliases, tags, block scalars, directives).
  if (form !== "quoted" && /^[&*!|>%@]/.test(value)) return false
  return !(form === "yaml" && typeLike.test(value))
}

/**
 * A flag's value that is a `key=value` specification (`--secret id=npmrc,src=.npmrc`), not a secret; base64
 * padding (`abc==`, `abcd=`) is not a `=` of one.
 */
export const flagSpecification = (value: string): boolean => /^[a-z][\w-]{0,31}=(?!=|$)/i.test(value)
