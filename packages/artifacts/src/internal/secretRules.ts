/**
 * The default redaction rules, one per kind of secret, as data.
 *
 * Patterns anchor on what a vendor documents: a fixed prefix, a length, a
 * charset, a checksum or a structure (a key block's armour lines, a URL's
 * user info). Where the format alone is not distinctive, the rule anchors on
 * the name the value is assigned to and checks the value (see
 * `secretChecks.ts`). The fragments and combinators the patterns are
 * composed of are in `rulePatterns.ts`.
 *
 * Conventions every rule keeps:
 * - a match never starts or ends inside a run of the value's own charset, so
 *   a marker never leaves part of a value beside it (the marker test checks
 *   each rule's examples byte for byte);
 * - `maxLength` covers the match and what its lookaheads read past it, and
 *   `maxLookbehind` what it reads before (the tests check every example's
 *   match against its bound);
 * - a pattern starts with its most distinctive literal where it has one, and
 *   puts boundary checks in lookbehinds after it: the combined scan is fast
 *   only when its alternatives start with literals;
 * - no numbered backreferences (rules are combined; `make` refuses them).
 */

import {
  argument,
  argumentsBefore,
  assignedValue,
  assignment,
  base64Body,
  configAssignment,
  configValue,
  credential,
  end,
  generatedValue,
  jsonEscape,
  literalBackslashes,
  netrcOrFlagValue,
  notCredentialTokens,
  passwordNames,
  passwordValue,
  prefixed,
  type RuleData,
  r,
  secretNames
} from "./rulePatterns.ts"
import {
  basicCredentials,
  dockerConfigJson,
  flagSpecification,
  looksGenerated,
  luhn,
  notALiteral,
  privateKeyBase64
} from "./secretChecks.ts"

/**
 * Ordered from the most specific to the most generic; when two rules match at
 * the same place the longer match wins and the earlier rule names it.
 */
export const rules: ReadonlyArray<RuleData> = [
  // Private keys (whole blocks: the armour lines carry nothing secret, but a block is one value).
  {
    name: "private-key-block",
    description: "PEM private keys (RSA, EC, DSA, OpenSSH, PKCS#8, encrypted), also with JSON-escaped newlines",
    // A complete block, or (when no END line follows) the header and everything key-like after it.
    pattern: r`-----BEGIN[A-Z0-9 ]{0,32} PRIVATE KEY-----(?:[\s\S]{0,16384}?-----END[A-Z0-9 ]{0,32} PRIVATE KEY-----|[A-Za-z0-9+/=\s:,.\\-]{0,16384})`,
    maxLength: 16512
  },
  {
    name: "pgp-private-key-block",
    description: "OpenPGP armoured private key blocks",
    pattern: r`-----BEGIN PGP PRIVATE KEY BLOCK-----(?:[\s\S]{0,32768}?-----END PGP PRIVATE KEY BLOCK-----|[A-Za-z0-9+/=\s:,.\\-]{0,32768})`,
    maxLength: 32880
  },
  {
    name: "putty-private-key",
    description: "PuTTY private key files (.ppk), from the Private-Lines header to the MAC",
    pattern: r`Private-Lines:[ \t]*\d{1,3}\r?\n(?<secret>[A-Za-z0-9+/=\r\n]{16,16384}?)\r?\nPrivate-(?:MAC|Hash):[ \t]*[0-9a-f]{40,64}`,
    maxLength: 16512
  },
  {
    name: "private-key-base64",
    description:
      "private keys as bare base64 outside PEM armour (DER PKCS#1, PKCS#8 also encrypted, SEC1 EC, PKCS#12; OpenSSH key bodies), on one line or wrapped, recognised by their decoded structure",
    // A base64 run, on one line or wrapped at 64 or 76 (also with JSON-escaped newlines); the check decodes its opening.
    pattern: r`(?:M(?<=(?:^|[^A-Za-z0-9+/\\]|\\[nrt"'])M)${base64Body(1)}|b3BlbnNzaC1rZXktdjE(?<=(?:^|[^A-Za-z0-9+/\\]|\\[nrt"'])b3BlbnNzaC1rZXktdjE)${base64Body(19)})`,
    // 200 wrapped lines of 76 with their breaks (18 each) and indentation, or one line of 12,000, and what the end reads.
    maxLength: 19_000,
    maxLookbehind: 2,
    verify: privateKeyBase64
  },
  prefixed(
    "age-secret-key",
    "age encryption secret keys",
    "AGE-SECRET-KEY-1",
    "[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
    74
  ),

  // Cloud.
  {
    name: "aws-access-key-id",
    description: "AWS access key IDs (AKIA, ASIA and the other documented prefixes)",
    pattern: r`\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|APKA|A3T[A-Z0-9])[A-Z0-9]{16}\b`,
    maxLength: 21
  },
  {
    name: "aws-secret-access-key",
    description: "AWS secret access keys and session tokens assigned to an aws_* name",
    pattern: r`aws_?(?:secret_?access_?key|secret_?key|session_?token)\b(?:\\?["'])?[ \t]{0,8}(?::=|=>|=|:)[ \t]{0,8}(?:\\?["'])?(?<secret>[A-Za-z0-9/+=]{40,1024})(?![A-Za-z0-9/+=])`,
    flags: "i",
    maxLength: 1100
  },
  prefixed("google-api-key", "Google API keys (Maps, Gemini, Firebase)", "AIza", "[0-9A-Za-z_-]{35}", 39),
  prefixed("google-oauth-client-secret", "Google OAuth client secrets", "GOCSPX-", "[0-9A-Za-z_-]{28}", 35),
  prefixed("google-oauth-access-token", "Google OAuth access tokens", r`ya29\.`, "[0-9A-Za-z_-]{20,2048}", 2053),
  prefixed("google-oauth-refresh-token", "Google OAuth refresh tokens", "1//0", "[0-9A-Za-z_-]{40,512}", 516),
  prefixed(
    "firebase-cloud-messaging-key",
    "Firebase Cloud Messaging legacy server keys",
    "AAAA",
    "[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{120,160}",
    178
  ),
  {
    name: "azure-storage-account-key",
    description: "Azure storage account keys and Service Bus shared access keys in connection strings",
    pattern: r`\b(?:AccountKey|SharedAccessKey)=(?<secret>[A-Za-z0-9+/]{40,100}={0,2})(?![A-Za-z0-9+/=])`,
    maxLength: 120
  },
  {
    name: "azure-sas-signature",
    description: "signatures of Azure shared access signature URLs",
    pattern: r`[?&]sig=(?<secret>[A-Za-z0-9%+/]{40,128}(?:%3D|=){0,2})(?![A-Za-z0-9%+/=])`,
    maxLength: 140
  },
  {
    name: "azure-ad-client-secret",
    description: "Microsoft Entra ID (Azure AD) client secrets",
    pattern: r`Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])(?<=(?<![A-Za-z0-9_~.-])(?<secret>[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}))`,
    maxLength: 42,
    maxLookbehind: 6
  },
  prefixed("digitalocean-token", "DigitalOcean personal, OAuth and refresh tokens", "do[opr]_v1_", "[a-f0-9]{64}", 71),
  prefixed("alibaba-access-key-id", "Alibaba Cloud access key IDs", "LTAI", "[A-Za-z0-9]{12,20}", 24),
  prefixed("heroku-api-key", "Heroku platform API keys", "HRKU-", "[A-Za-z0-9_-]{20,100}", 105),

  // Source hosts and CI.
  prefixed(
    "github-token",
    "GitHub personal, OAuth, user, server and refresh tokens",
    "gh[pousr]_",
    "[A-Za-z0-9]{36,251}",
    255
  ),
  prefixed(
    "github-fine-grained-token",
    "GitHub fine-grained personal access tokens",
    "github_pat_",
    "[A-Za-z0-9_]{22,244}",
    255
  ),
  prefixed(
    "gitlab-personal-token",
    "GitLab personal, project and group access tokens",
    "glpat-",
    "[A-Za-z0-9_.-]{20,249}",
    255
  ),
  prefixed(
    "gitlab-ci-token",
    "GitLab runner, deploy, pipeline-trigger, CI build, feed and OAuth application tokens",
    "(?:glrt-|gldt-|glptt-|glcbt-|glft-|gloas-|glsoat-|GR1348941)",
    "[A-Za-z0-9_.-]{20,249}",
    260
  ),
  prefixed("bitbucket-app-password", "Bitbucket app passwords", "ATBB", "[A-Za-z0-9_=.-]{28,64}", 68),
  prefixed("atlassian-api-token", "Atlassian (Jira, Confluence) API tokens", "ATATT3", "[A-Za-z0-9_=.-]{40,300}", 306),
  prefixed(
    "circleci-token",
    "CircleCI personal and project API tokens",
    "CCI(?:PAT|PRJ)_",
    "[A-Za-z0-9]{22}_[a-f0-9]{40}",
    71
  ),
  prefixed("buildkite-token", "Buildkite API access tokens", "bkua_", "[a-f0-9]{40}", 45),
  prefixed("npm-token", "npm access tokens", "npm_", "[A-Za-z0-9]{36}", 40),
  prefixed("pypi-token", "PyPI API tokens", "pypi-AgEIcHlwaS5vcmc", "[A-Za-z0-9_-]{50,300}", 320),
  prefixed("rubygems-api-key", "RubyGems API keys", "rubygems_", "[a-f0-9]{48}", 57),
  prefixed("nuget-api-key", "NuGet API keys", "oy2", "[a-z0-9]{43}", 46),
  prefixed("docker-hub-token", "Docker Hub personal access tokens", "dckr_pat_", "[A-Za-z0-9_-]{27,64}", 73),
  {
    name: "terraform-cloud-token",
    description: "HCP Terraform (Terraform Cloud) API tokens",
    pattern: r`\.atlasv1\.[A-Za-z0-9_=-]{60,90}${end}(?<=(?<![A-Za-z0-9_-])(?<secret>[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,90}))`,
    maxLength: 114,
    maxLookbehind: 16
  },
  prefixed(
    "vault-token",
    "HashiCorp Vault service, batch and recovery tokens",
    r`hv[sbr]\.`,
    "[A-Za-z0-9_-]{24,512}",
    516
  ),
  prefixed("pulumi-token", "Pulumi access tokens", "pul-", "[a-f0-9]{40}", 44),
  prefixed(
    "doppler-token",
    "Doppler service and personal tokens",
    r`dp\.(?:pt|st|ct|sa|scim|audit)\.`,
    "[A-Za-z0-9]{40,44}",
    55
  ),
  prefixed(
    "dynatrace-token",
    "Dynatrace API and platform tokens",
    r`dt0[a-z][0-9]{2}\.`,
    r`[A-Z0-9]{24}\.[A-Z0-9]{64}`,
    96
  ),
  prefixed("sentry-token", "Sentry organization and user auth tokens", "sntry[su]_", "[A-Za-z0-9+/=_]{40,300}", 307),
  prefixed(
    "grafana-token",
    "Grafana service account and Grafana Cloud tokens",
    "(?:glsa|glc)_",
    "[A-Za-z0-9+/_=]{32,400}",
    405
  ),
  prefixed("new-relic-key", "New Relic user API keys", "NRAK-", "[A-Z0-9]{27}", 32),
  prefixed("databricks-token", "Databricks personal access tokens", "dapi", "[a-f0-9]{32}(?:-[0-9])?", 38),
  prefixed("linear-api-key", "Linear API keys", "lin_api_", "[A-Za-z0-9]{40}", 48),
  prefixed("postman-api-key", "Postman API keys", "PMAK-", "[a-f0-9]{24}-[a-f0-9]{34}", 64),
  prefixed("figma-token", "Figma personal access tokens", "figd_", "[A-Za-z0-9_-]{40,64}", 69),
  prefixed("notion-token", "Notion integration tokens", "(?:ntn_|secret_)", "[A-Za-z0-9]{43,46}", 53),
  prefixed("airtable-token", "Airtable personal access tokens", "pat", r`[A-Za-z0-9]{14}\.[a-f0-9]{64}`, 82),
  prefixed("supabase-token", "Supabase access tokens", "sbp_", "[a-f0-9]{40}", 44),
  prefixed(
    "planetscale-token",
    "PlanetScale service tokens and passwords",
    "pscale_(?:tkn|pw|oauth)_",
    "[A-Za-z0-9_.-]{32,64}",
    77
  ),
  prefixed(
    "one-password-service-token",
    "1Password service account tokens",
    "ops_",
    "eyJ[A-Za-z0-9_-]{100,2048}",
    2056
  ),

  // Chat and messaging.
  {
    ...prefixed(
      "slack-token",
      "Slack bot, user, app, refresh and configuration tokens",
      "(?:xox[abeprs]|xapp)-",
      "[0-9A-Za-z.-]{10,250}",
      256
    ),
    verify: looksGenerated
  },
  {
    name: "slack-webhook",
    description: "Slack incoming webhook and workflow URLs (the path after the host is the secret)",
    pattern: r`https://hooks\.slack\.com/(?<secret>(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,200})`,
    maxLength: 240
  },
  {
    name: "discord-webhook",
    description: "Discord webhook URLs (the token after the ID)",
    pattern: r`https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/(?<secret>[A-Za-z0-9_-]{60,72})`,
    maxLength: 140
  },
  {
    ...prefixed(
      "discord-bot-token",
      "Discord bot tokens",
      // The bot's ID in base64: a decimal ID's first digit encodes as M, N or O.
      "[MNO]",
      r`[A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}`,
      76
    ),
    verify: looksGenerated
  },
  {
    name: "telegram-bot-token",
    description: "Telegram bot tokens",
    pattern: r`:AA[0-9A-Za-z_-]{33}${end}(?<=(?<![0-9])(?<secret>[0-9]{8,10}:AA[0-9A-Za-z_-]{33}))`,
    maxLength: 47,
    maxLookbehind: 12
  },
  {
    name: "teams-webhook",
    description: "Microsoft Teams incoming webhook URLs",
    pattern: r`https://[a-z0-9-]{1,64}\.webhook\.office\.com/(?<secret>webhookb2/[A-Za-z0-9@/_-]{40,400})`,
    maxLength: 510
  },
  prefixed("twilio-api-key", "Twilio API key SIDs paired with secrets", "SK", "[0-9a-f]{32}", 34),
  prefixed("sendgrid-api-key", "SendGrid API keys", r`SG\.`, r`[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}`, 69),
  prefixed("mailgun-api-key", "Mailgun API keys", "key-", "[0-9a-f]{32}", 36),
  {
    name: "mailchimp-api-key",
    description: "Mailchimp API keys",
    // Found by its -usN data-centre suffix; the key is captured by the lookbehind that follows it.
    pattern: r`-us[0-9]{1,2}${end}(?<=(?<![A-Za-z0-9_-])(?<secret>[0-9a-f]{32}-us[0-9]{1,2}))`,
    maxLength: 38,
    maxLookbehind: 34
  },
  prefixed("brevo-api-key", "Brevo (Sendinblue) API keys", "xkeysib-", "[a-f0-9]{64}-[A-Za-z0-9]{16}", 89),

  // Payments.
  prefixed(
    "stripe-secret-key",
    "Stripe secret and restricted keys, live and test",
    "(?:sk|rk)_(?:live|test)_",
    "[0-9A-Za-z]{10,247}",
    255
  ),
  prefixed("stripe-webhook-secret", "Stripe webhook signing secrets", "whsec_", "[A-Za-z0-9+/=]{32,128}", 134),
  prefixed(
    "square-token",
    "Square access tokens and OAuth secrets",
    "(?:sq0atp-|sq0csp-|EAAA)",
    "[0-9A-Za-z_-]{22,80}",
    87
  ),
  prefixed(
    "braintree-access-token",
    "PayPal Braintree access tokens",
    r`access_token\$(?:production|sandbox)\$`,
    r`[0-9a-z]{16}\$[0-9a-f]{32}`,
    86
  ),
  prefixed("shopify-token", "Shopify access tokens and shared secrets", "shp(?:at|ca|pa|ss)_", "[a-fA-F0-9]{32}", 38),
  prefixed("flutterwave-secret-key", "Flutterwave secret keys", "FLWSECK(?:_TEST)?-", "[a-f0-9]{32}-X", 50),
  {
    name: "payment-card-number",
    description: "payment card numbers (Visa, Mastercard, American Express, Discover), Luhn-checked",
    pattern: r`(?:4[0-9]{3}|5[1-5][0-9]{2}|2[2-7][0-9]{2}|6011|3[47][0-9]{2})(?<=(?<![0-9A-Za-z_.-])[0-9]{4})(?:[ -]?[0-9]{4}){2}[ -]?[0-9]{1,7}(?![0-9A-Za-z_-]|\.[0-9])`,
    maxLength: 26,
    verify: (value) => {
      const digits = value.replace(/[ -]/g, "")
      return digits.length >= 13 && digits.length <= 19 && luhn(digits)
    }
  },

  // Model providers.
  prefixed(
    "anthropic-api-key",
    "Anthropic API and admin keys",
    "sk-ant-(?:api|admin|sid)[0-9]{2}-",
    "[A-Za-z0-9_-]{32,200}",
    220
  ),
  {
    ...prefixed(
      "openai-api-key",
      "OpenAI project, service account, admin and legacy keys, and DeepSeek-style sk- keys",
      "sk-(?:proj-|svcacct-|admin-|None-)?",
      "(?:[A-Za-z0-9_-]{20,300}T3BlbkFJ[A-Za-z0-9_-]{20,300}|[A-Za-z0-9_-]{40,300}|[a-f0-9]{32})",
      620
    ),
    verify: looksGenerated
  },
  prefixed("openrouter-api-key", "OpenRouter API keys", "sk-or-v1-", "[a-f0-9]{64}", 73),
  prefixed("groq-api-key", "Groq API keys", "gsk_", "[A-Za-z0-9]{52}", 56),
  prefixed("huggingface-token", "Hugging Face access tokens", "hf_", "[A-Za-z]{34}", 37),
  prefixed("replicate-token", "Replicate API tokens", "r8_", "[A-Za-z0-9]{37}", 40),
  prefixed("perplexity-api-key", "Perplexity API keys", "pplx-", "[A-Za-z0-9]{48}", 53),
  prefixed("xai-api-key", "xAI API keys", "xai-", "[A-Za-z0-9]{80}", 84),

  // Other services with documented prefixes.
  prefixed(
    "mapbox-secret-token",
    "Mapbox secret tokens",
    r`sk\.`,
    r`eyJ[A-Za-z0-9_-]{20,400}\.[A-Za-z0-9_-]{16,64}`,
    472
  ),
  prefixed("facebook-access-token", "Facebook (Meta) access tokens", "EAA[BCDGI]", "[A-Za-z0-9]{90,400}", 404),
  prefixed(
    "twitter-bearer-token",
    "X (Twitter) app bearer tokens",
    "AAAAAAAAAAAAAAAAAAAAA",
    "[A-Za-z0-9%]{30,200}",
    221
  ),
  prefixed("dropbox-token", "Dropbox short-lived access tokens", r`sl\.(?:u\.)?`, "[A-Za-z0-9_-]{130,1400}", 1405),
  prefixed("shippo-token", "Shippo API tokens", "shippo_(?:live|test)_", "[a-f0-9]{40}", 52),

  // Generic structures.
  {
    name: "jwt",
    description: "JSON Web Tokens (signed or unsigned)",
    pattern: r`\beyJ[A-Za-z0-9_-]{2,4096}\.eyJ[A-Za-z0-9_-]{2,8192}\.[A-Za-z0-9_-]{0,4096}(?![A-Za-z0-9_-])`,
    maxLength: 16393
  },
  {
    name: "url-credentials",
    description: "the password in a URL's user info (scheme://user:password@host), any scheme",
    pattern: r`://(?<=[A-Za-z0-9+.-]://)[^\s:/?#@"'<>]{0,256}:(?<secret>[^\s/?#"'<>]{1,256})@(?=[^\s/?#@"'<>]{1,256})`,
    maxLength: 780
  },
  {
    name: "http-basic-credentials",
    description: "HTTP Basic credentials: base64 of user:password after `Basic` (checked by decoding)",
    pattern: r`\bBasic[ \t]{1,8}(?<secret>[A-Za-z0-9+/]{6,1024}={0,2})(?![A-Za-z0-9+/=])`,
    flags: "i",
    maxLength: 1041,
    verify: basicCredentials
  },
  {
    name: "docker-config-auth",
    description:
      "credentials in Docker config.json and .dockercfg `auth` fields, quoted, JSON-escaped or YAML, and in .npmrc `_auth` (base64 of user:password, checked by decoding)",
    pattern: r`auth(?<=(?:^|[^\w-]|(?:^|[^\w-])_)auth)(?:\\?["'])?[ \t]{0,8}[:=][ \t]{0,8}(?:\\?["'])?(?<secret>[A-Za-z0-9+/]{6,1024}={0,2})(?![A-Za-z0-9+/=])`,
    maxLength: 1052,
    maxLookbehind: 2,
    verify: basicCredentials
  },
  {
    name: "docker-config-json",
    description:
      "a whole Docker config in base64 under a Kubernetes `.dockerconfigjson` or `.dockercfg` key (checked by decoding)",
    pattern: r`\.docker(?:configjson|cfg)(?:\\?["'])?[ \t]{0,8}[:=][ \t]{0,8}(?:\\?["'])?(?<secret>[A-Za-z0-9+/]{16,16384}={0,2})(?![A-Za-z0-9+/=])`,
    maxLength: 16440,
    verify: dockerConfigJson
  },
  {
    name: "cli-user-password",
    description:
      "user:password given to -u/--user (curl, wget and friends), the user maybe empty, the whole or the password quoted",
    // `"user:pw"` and `'user:pw'` quoted whole; `user:pw`, `user:'pw'` and `:pw` unquoted or with the password quoted.
    pattern: r`(?:-u|--user|--proxy-user|--http-user|--ftp-user)(?<=(?<![\w-])-[\w-]{1,16})(?:[ \t]{1,8}|=)(?:(?<uq>["'])[^:"'\n\r]{0,128}:(?<secret>(?:(?!\k<uq>)[^\n\r]){1,256})\k<uq>|[^\s:"']{0,128}:${argument("secret2", "secret3")})`,
    maxLength: 410,
    maxLookbehind: 18,
    verify: (value) => !/^\d+$/.test(value) && !notALiteral(value, true)
  },
  {
    name: "cli-password-option",
    description:
      "passwords given to -p of mysql, mariadb and their tools (attached, `-pSECRET`), to -p of sshpass and of docker, podman or helm registry login, and to -a or --pass of redis-cli",
    // Found at the command; the arguments before the option are skipped, and none of them is the option itself.
    pattern: r`\b(?:(?:mysql(?:dump|admin|import|show|check|sh|binlog|slap|pump)?|mariadb(?:-(?:dump|admin|import|check|show|slap|binlog))?)${argumentsBefore("-p", 16)}[ \t]{1,8}-p${argument("secret", "secret2")}|sshpass${argumentsBefore("-p", 8)}[ \t]{1,8}-p[ \t]{0,8}${argument("secret3", "secret4")}|redis-cli${argumentsBefore("-a|--pass", 16)}[ \t]{1,8}(?:-a|--pass)[ \t]{1,8}${argument("secret5", "secret6")}|(?:docker|podman|buildah|nerdctl|skopeo|oras|helm[ \t]{1,8}registry)[ \t]{1,8}login${argumentsBefore("-p", 16)}[ \t]{1,8}-p[ \t]{1,8}${argument("secret7", "secret8")})`,
    maxLength: 4600,
    verify: (value) => !notALiteral(value, true)
  },
  {
    name: "bearer-token",
    description: "the credential after `Bearer` (Authorization headers and similar)",
    pattern: r`\bbearer[ \t]{1,8}(?<secret>[A-Za-z0-9._~+/-]{8,4096}={0,8})(?![A-Za-z0-9._~+/=-])`,
    flags: "i",
    maxLength: 4128,
    verify: looksGenerated
  },
  {
    name: "authorization-header",
    description:
      "the credential of an Authorization header after any scheme (Token, Api-Token, ApiKey, SSWS, Negotiate, ...) or none, but AWS4 signatures",
    // The scheme is any word; a credential without one ends its line: `Api-Token $REF` is a scheme and a reference.
    pattern: r`\bauthorization\b(?:\\?["'])?[ \t]{0,8}[:=][ \t]{0,8}(?:\\?["'])?(?:(?!AWS4-)[A-Za-z][A-Za-z0-9_-]{0,31}[ \t]{1,8}(?<secret>${credential})|(?!AWS4-)(?<secret2>${credential})(?![ \t]{1,8}[^\s"'\\,;]))`,
    flags: "i",
    // The name, quotes and operator (35), a scheme and its spaces (40), the credential (1032) and the lookaheads (10).
    maxLength: 1120,
    verify: looksGenerated
  },
  {
    name: "connection-string-password",
    description:
      "passwords in JDBC, ODBC and ADO.NET connection strings after `;` (`;password=`, `;pwd=`), up to the next `;`, also `{braced}`",
    // Found at the keyword (a `;` is everywhere in code); the lookbehind after it checks the `;` before.
    pattern: r`(?:password|pwd)(?<=;[ \t]{0,8}(?:password|pwd))[ \t]{0,8}=[ \t]{0,8}(?:\{(?<secret>(?:[^}\r\n]|\}\}){1,256})\}|(?<secret2>(?![ \t{])(?:[^;\r\n"'\\]|${literalBackslashes}){1,256}?))(?=[ \t]{0,8}(?:[;\r\n"']|${jsonEscape}|$))`,
    flags: "i",
    maxLength: 560,
    maxLookbehind: 9,
    verify: passwordValue
  },
  {
    name: "netrc-password",
    description: "passwords in .netrc entries (machine ... login ... password ...)",
    pattern: r`\bmachine[ \t]{1,8}(?:[\w-]{1,63}\.[\w.-]{1,190}|localhost)[ \t\r\n]{1,8}login[ \t]{1,8}\S{1,256}[ \t\r\n]{1,8}password[ \t]{1,8}${netrcOrFlagValue}`,
    maxLength: 840
  },
  {
    name: "cli-secret-flag",
    description:
      "values of --password, --token, --secret, --api-key style command-line flags, after a space or `=`, quoted or not (not pagination tokens such as --starting-token)",
    pattern: r`--(?:[a-z0-9]{1,32}-){0,4}(?:password|passwd|passphrase|token(?<!${notCredentialTokens}-token)|secret|api-key|apikey|access-key|secret-key)(?:[ \t]{1,8}|=)${argument("secret", "secret2")}`,
    flags: "i",
    maxLength: 420,
    // A flag's value is a literal even when it reads like an identifier, but `id=...,src=...` is a specification.
    verify: (value) => !notALiteral(value, true) && !flagSpecification(value)
  },
  {
    name: "xml-secret-element",
    description: "text of XML elements named like a password, secret, token or API key",
    pattern: r`<(?:[\w.-]{1,64}:)?[\w.-]{0,64}(?:password|passwd|secret|token|api[_-]?key)>(?<secret>[^<\n]{1,512})</`,
    flags: "i",
    maxLength: 660,
    verify: passwordValue
  },
  {
    name: "name-value-secret",
    description:
      "a literal in the value field that follows a name field naming a password, secret, token or API key (Kubernetes and Compose env lists, GitHub Actions inputs)",
    // Found at the keyword; the lookbehind after it checks that the keyword ends the value of a `name` field.
    pattern: `(?:passw(?:or)?d|secret|token|api[_-]?key|private[_-]?key|credentials?)(?<=\\bname["']?[ \\t]{0,8}[:=][ \\t]{0,8}["']?[\\w.-]{0,64})["']?[ \\t]{0,8},?[ \\t]{0,8}\\r?\\n[ \\t]{0,32}-?[ \\t]{0,8}["']?value["']?[ \\t]{0,8}[:=][ \\t]{0,8}${assignedValue}`,
    flags: "i",
    maxLength: 1200,
    maxLookbehind: 90,
    verify: passwordValue
  },
  assignment(
    "password-assignment",
    'any literal assigned to a name ending in password, passwd, passphrase, pwd or _pass (DB_PASSWORD=, "password": , :=, ?=, =>, quoted or JSON-escaped)',
    passwordNames,
    passwordValue
  ),
  assignment(
    "secret-assignment",
    "a generated-looking literal (8+ characters, varied, high entropy) assigned to a name ending in secret, token, api key, private key, access key, credentials and similar",
    secretNames,
    generatedValue
  ),
  {
    name: "config-secret-assignment",
    description:
      'any literal assigned at the start of a line to a name ending in password, secret, token, credentials or api key, in .env (TOKEN=abc), YAML (token: abc) and HCL, TOML or INI (secret = "abc") lines, also JSON-escaped; not numbers, settings, references, placeholders or names',
    pattern: configAssignment,
    flags: "i",
    maxLength: 1100,
    // The line-start check reads a line break (2), indentation (32), a dash and a quote (10), `declare -x` and its
    // spaces (25) and up to 96 name characters: 165.
    maxLookbehind: 170,
    verify: configValue
  }
]
