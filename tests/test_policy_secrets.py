"""Secret detection and redaction (ee.policy.secrets).

Every "secret" here is fabricated at run time from a seeded RNG in the shape of the real thing, so no
credential, real or fake-looking, is committed to the repository (and push-protection scanners stay quiet).
"""

from __future__ import annotations

import base64
import itertools
import json
import random
import re
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ee.policy import secrets
from ee.policy.entropy import shannon_entropy
from ee.policy.secrets import SecretFinding, find_secrets, redact

UPPER_DIGITS = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"


def rnd(seed: str, n: int, alphabet: str = ALNUM) -> str:
    """A deterministic random string: the same seed always gives the same fake secret."""
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def fake_jwt(seed: str) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps({"sub": rnd(seed + "s", 8, string.digits), "iat": 1733130000}).encode())
    return f"{header}.{payload}.{rnd(seed, 43, B64URL)}"


def fake_pem(kind: str, seed: str, lines: int = 6) -> str:
    body = "\n".join(rnd(f"{seed}{i}", 64, B64) for i in range(lines))
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----"


AWS_ID = "AKIA" + rnd("aws-id", 16, UPPER_DIGITS)
AWS_SECRET = rnd("aws-secret", 40, B64)
GHP = "ghp_" + rnd("ghp", 36)
PEM_RSA = fake_pem("RSA PRIVATE KEY", "rsa")
PEM_OPENSSH = fake_pem("OPENSSH PRIVATE KEY", "openssh", 4)
JWT = fake_jwt("jwt")

# (case id, text, expected class, the exact part that must be redacted)
POSITIVES: list[tuple[str, str, str, str]] = [
    ("aws-id-assign", f"aws_access_key_id = {AWS_ID}", "aws_access_key", AWS_ID),
    (
        "aws-id-prose",
        f"temp creds start with ASIA{rnd('asia', 16, UPPER_DIGITS)} and expire",
        "aws_access_key",
        "ASIA" + rnd("asia", 16, UPPER_DIGITS),
    ),
    ("aws-secret-ini", f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_key", AWS_SECRET),
    (
        "aws-secret-json",
        f'{{"AWS_SECRET_ACCESS_KEY": "{rnd("aws-json", 40, B64)}"}}',
        "aws_secret_key",
        rnd("aws-json", 40, B64),
    ),
    (
        "aws-secret-prose",
        f"AWS secret for the staging bucket: {rnd('aws-prose', 40, B64)}",
        "aws_secret_key",
        rnd("aws-prose", 40, B64),
    ),
    ("github-ghp", f"export GH_TOKEN={GHP}", "github_token", GHP),
    ("github-gho", f"oauth token gho_{rnd('gho', 36)} from the app", "github_token", "gho_" + rnd("gho", 36)),
    ("github-ghs", f"ghs_{rnd('ghs', 36)}", "github_token", "ghs_" + rnd("ghs", 36)),
    ("github-ghr", f"refresh: ghr_{rnd('ghr', 76)}", "github_token", "ghr_" + rnd("ghr", 76)),
    (
        "github-pat",
        f"use github_pat_{rnd('pat1', 22)}_{rnd('pat2', 59)} for the bot",
        "github_token",
        f"github_pat_{rnd('pat1', 22)}_{rnd('pat2', 59)}",
    ),
    (
        "gitlab",
        f"CI uses glpat-{rnd('glpat', 20, B64URL)} to push",
        "gitlab_token",
        "glpat-" + rnd("glpat", 20, B64URL),
    ),
    (
        "slack-bot",
        f"SLACK=xoxb-{rnd('sb1', 12, string.digits)}-{rnd('sb2', 13, string.digits)}-{rnd('sb3', 24)}",
        "slack_token",
        f"xoxb-{rnd('sb1', 12, string.digits)}-{rnd('sb2', 13, string.digits)}-{rnd('sb3', 24)}",
    ),
    (
        "slack-user",
        f"xoxp-{rnd('su1', 11, string.digits)}-{rnd('su2', 12, string.digits)}-{rnd('su3', 32, HEX)}",
        "slack_token",
        f"xoxp-{rnd('su1', 11, string.digits)}-{rnd('su2', 12, string.digits)}-{rnd('su3', 32, HEX)}",
    ),
    (
        "slack-webhook",
        f"post alerts to https://hooks.slack.com/services/T{rnd('w1', 8, UPPER_DIGITS)}/"
        f"B{rnd('w2', 10, UPPER_DIGITS)}/{rnd('w3', 24)} please",
        "slack_webhook",
        f"T{rnd('w1', 8, UPPER_DIGITS)}/B{rnd('w2', 10, UPPER_DIGITS)}/{rnd('w3', 24)}",
    ),
    ("stripe-sk", f"STRIPE_KEY=sk_live_{rnd('stripe', 24)}", "stripe_key", "sk_live_" + rnd("stripe", 24)),
    ("stripe-rk", f"restricted rk_live_{rnd('rk', 99)}", "stripe_key", "rk_live_" + rnd("rk", 99)),
    ("openai-legacy", f"OPENAI_API_KEY: sk-{rnd('oa', 48)}", "openai_key", "sk-" + rnd("oa", 48)),
    (
        "openai-proj",
        f"key sk-proj-{rnd('oap', 120, B64URL)} in .env",
        "openai_key",
        "sk-proj-" + rnd("oap", 120, B64URL),
    ),
    (
        "anthropic",
        f"ANTHROPIC_API_KEY=sk-ant-api03-{rnd('ant', 93, B64URL)}AA",
        "anthropic_key",
        f"sk-ant-api03-{rnd('ant', 93, B64URL)}AA",
    ),
    ("google", f"maps key AIza{rnd('goog', 35, B64URL)}", "google_api_key", "AIza" + rnd("goog", 35, B64URL)),
    ("npm", f"//registry.npmjs.org/:_authToken=npm_{rnd('npm', 36)}", "npm_token", "npm_" + rnd("npm", 36)),
    (
        "pypi",
        f"password = pypi-AgEIcHlwaS5vcmc{rnd('pypi', 70, B64URL)}",
        "pypi_token",
        "pypi-AgEIcHlwaS5vcmc" + rnd("pypi", 70, B64URL),
    ),
    ("twilio-sid", f"twilio api key SK{rnd('tw', 32, HEX)}", "twilio_key", "SK" + rnd("tw", 32, HEX)),
    ("twilio-auth", f"TWILIO_AUTH_TOKEN={rnd('twa', 32, HEX)}", "twilio_key", rnd("twa", 32, HEX)),
    (
        "sendgrid",
        f"SG.{rnd('sg1', 22, B64URL)}.{rnd('sg2', 43, B64URL)}",
        "sendgrid_key",
        f"SG.{rnd('sg1', 22, B64URL)}.{rnd('sg2', 43, B64URL)}",
    ),
    (
        "huggingface",
        f"huggingface-cli login --token hf_{rnd('hf', 34)}",
        "huggingface_token",
        "hf_" + rnd("hf", 34),
    ),
    ("jwt", f"curl -H 'X-Session: {JWT}' https://api.internal", "jwt", JWT),
    ("jwt-assign", f"token={JWT}", "jwt", JWT),
    ("pem-rsa", f"deploy key:\n{PEM_RSA}\nend", "private_key", PEM_RSA),
    ("pem-openssh", PEM_OPENSSH, "private_key", PEM_OPENSSH),
    (
        "pem-json-escaped",
        '{"private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + rnd("gcp", 64, B64)
        + "\\n"
        + rnd("gcp2", 40, B64)
        + '\\n-----END PRIVATE KEY-----\\n"}',
        "private_key",
        "-----BEGIN PRIVATE KEY-----\\n"
        + rnd("gcp", 64, B64)
        + "\\n"
        + rnd("gcp2", 40, B64)
        + "\\n-----END PRIVATE KEY-----",
    ),
    (
        "url-postgres",
        "DATABASE_URL=postgres://app:Vq3rT9zLm2@db.internal:5432/app",
        "url_password",
        "Vq3rT9zLm2",
    ),
    ("url-redis-nouser", "redis://:k8Pw2mQz7Rt@cache.local:6379/0", "url_password", "k8Pw2mQz7Rt"),
    (
        "url-https",
        "git clone https://deploy:Hq7Zr2Lw9Xp@git.example.org/team/repo.git",
        "url_password",
        "Hq7Zr2Lw9Xp",
    ),
    ("password-env", "DB_PASSWORD=Tr0ub4dor&3", "password_assignment", "Tr0ub4dor&3"),
    ("password-yaml-quoted", "db:\n  password: 'N7q!xR2#vL'\n", "password_assignment", "N7q!xR2#vL"),
    ("passwd-colon", "passwd: s3cr3t-Pa55", "password_assignment", "s3cr3t-Pa55"),
    (
        "password-python",
        'connect(host="db", password="correct-horse-42")',
        "password_assignment",
        "correct-horse-42",
    ),
    (
        "token-query",
        f"GET /v1/items?access_token={rnd('qt', 28, ALNUM)}&page=2",
        "secret_assignment",
        rnd("qt", 28, ALNUM),
    ),
    ("api-key-yaml", f'api_key: "{rnd("ak", 32, HEX)}"', "secret_assignment", rnd("ak", 32, HEX)),
    (
        "client-secret-json",
        f'"client_secret": "{rnd("cs", 30, B64URL)}"',
        "secret_assignment",
        rnd("cs", 30, B64URL),
    ),
    (
        "secret-key-toml",
        "secret_key = 'django-insecure-9k2mQ7zP4rL8'",
        "secret_assignment",
        "django-insecure-9k2mQ7zP4rL8",
    ),
    (
        "bearer",
        f"Authorization: Bearer {rnd('bearer', 40, B64URL + '.')}",
        "bearer_token",
        rnd("bearer", 40, B64URL + "."),
    ),
    ("entropy-quoted", f'SESSION_SALT = "{rnd("salt", 40)}"', "high_entropy", rnd("salt", 40)),
    (
        "entropy-b64",
        f"the signing material is {rnd('b64', 43, B64)}= (rotate monthly)",
        "high_entropy",
        rnd("b64", 43, B64) + "=",
    ),
    (
        "entropy-url-path",
        f"callback https://api.example.net/v2/hooks/{rnd('hook', 32)} fires on merge",
        "high_entropy",
        rnd("hook", 32),
    ),
]

LOOKALIKES: list[tuple[str, str]] = [
    ("placeholder-angle", "password=<your-password>"),
    ("placeholder-shell-var", "token=${TOKEN}"),
    ("placeholder-bare-var", "export API_TOKEN=$API_TOKEN"),
    ("placeholder-x", "api_key: xxxxxxxx"),
    ("placeholder-stars", "password: ********"),
    ("placeholder-changeme", "password: changeme"),
    ("example-plain-word", 'connect(host="db", password="correcthorse")'),
    ("example-default", "Connection(host='localhost:5672', userid='guest', password='guest')"),
    ("example-leet", "password=secr3t and 'PASSWORD': 's3krit' and pwd: P@ssw0rd"),
    ("mime-encoded-word", 'decode_header("Re: =?UTF-8?B?cHJvYmzDqG1lIGRlIG1hdHJpY2U=?=")'),
    (
        "message-id",
        "https://lore.kernel.org/git/CA+55aFzJtejiCjV0e43+9oR3QuJK2PiFiLQemytoLpyJWe6P9w@mail.gmail.com/",
    ),
    ("bcrypt-hash", "myName:$2y$05$c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC"),
    (
        "scram-hash",
        "CREATE ROLE joe PASSWORD 'SCRAM-SHA-256$4096:44560wPMLfjqiAzyPDZ/eQ==$4CA054rZlSFEq8Z3FEhToBTa2X6K'",
    ),
    ("base64-in-code", "const pubkey256 = 'pL1+qb9HTMRZJmuC/bB/ZI9d302BYrrqiVuRyW+DGrU=';"),
    ("signed-value", '>>> signing.loads("ImhlbGxvIg:1QaUZC:YIye-ze3TTx7gtSv422nZA4sgmk")'),
    ("placeholder-gha", "token: ${{ secrets.GITHUB_TOKEN }}"),
    ("placeholder-jinja", "db_password: '{{ vault_db_password }}'"),
    ("aws-doc-id", "aws_access_key_id = AKIAIOSFODNN7EXAMPLE"),
    ("aws-doc-secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("openai-prose", "Set OPENAI_API_KEY to your sk-... key before running the evals."),
    ("openai-prose-dashes", "Keys look like sk-proj-xxxx; never paste them into memories."),
    ("bearer-placeholder", "Send `Authorization: Bearer <token>` with every request."),
    ("bearer-var", 'curl -H "Authorization: Bearer ${API_TOKEN}" https://api.internal/v1/me'),
    ("git-sha", "Fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b (see PR 142)."),
    ("git-short-sha", "Revert 9fceb02 if the release breaks."),
    ("sha256-digest", "python@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    ("aws-context-hex", "aws secret rotation landed in 9fceb02d0ae598e95dc970b74767f19372d61af8"),
    ("uuid", "The tenant id is 550e8400-e29b-41d4-a716-446655440000."),
    ("version", "Pin ruff==0.8.4 and node 20.11.1-alpine3.19; the build is 1.2.3-rc.4+build.20241202."),
    ("go-pseudo-version", "require example.org/lib v0.0.0-20231204152536-5e1a8d9b7c3f"),
    ("ulid", "See mem_01JE4ZP6Q3V8R2K7M5T9W1X3YB and 01JE4ZQ0A1B2C3D4E5F6G7H8J9 for context."),
    ("snake-case", "test_parse_frontmatter_handles_unicode_bom_input_v2 is flaky on Windows"),
    (
        "camel-case",
        "AbstractSingletonProxyFactoryBean wraps XMLHttpRequestFactoryV2Impl and getHTTPResponseCode2",
    ),
    ("file-path", "Edit src/ee/policy/secrets.py and /usr/local/lib/python3.11/site-packages/ee/__init__.py"),
    ("java-path", "Import org/apache/commons/lang3/StringUtils from commons-lang3-3.14.0.jar"),
    ("base64-sentence", "The fixture holds SGVsbG8sIFdvcmxkISBIb3cgYXJlIHlvdT8= as sample input."),
    (
        "base64-png-prose",
        "A 1x1 PNG is iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kg"
        "AAAABJRU5ErkJggg",
    ),
    ("data-uri", f"background: url(data:image/webp;base64,{rnd('webp', 60, B64)})"),
    ("sri", f'<script integrity="sha512-{rnd("sri", 86, B64)}==" src="app.js">'),
    ("ssh-remote", "git remote add origin git@github.com:acme/widgets.git"),
    ("url-user-only", "Clone https://ci-bot@git.example.org/team/repo.git with the deploy key."),
    ("url-placeholder-pw", "Use postgres://user:password@localhost:5432/app locally."),
    ("url-var-pw", "amqp://guest:${RABBIT_PASSWORD}@rabbit:5672/"),
    ("env-lookup", 'password = os.environ["DB_PASSWORD"]'),
    ("getpass", "password = getpass.getpass()"),
    ("attr-ref", "client.login(token=args.token, password=self.password)"),
    ("max-tokens", "max_tokens: 4096"),
    ("password-prose", "password: stored in 1Password vault 'infra'"),
    ("token-type", "interface Session { token: string; expires: number }"),
    ("pem-header-prose", "Ed25519 keys begin with -----BEGIN OPENSSH PRIVATE KEY----- and are short."),
    ("pem-public", fake_pem("PUBLIC KEY", "pub")),
    ("ghp-placeholder", "GH_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
    ("hf-identifier", "hf_hub_download(repo_id='minishlab/potion-base-8M', filename='model.safetensors')"),
    ("slack-placeholder", "SLACK_BOT_TOKEN=xoxb-your-token-here"),
    ("stripe-test", "Stripe docs use sk_test_4eC39HqLyjWDarjtT1zdp7dc for examples."),
    ("jwt-header-only", "A JWT header such as eyJhbGciOiJIUzI1NiJ9 names the algorithm."),
    ("secret-ref", "api_key: env:OPENAI_API_KEY"),
    ("docker-secret-path", "db_password: /run/secrets/db_password"),
    ("nix-store", "/nix/store/0c0kqh8g0gjdbd9g0pa3pj7k7bd1r3ga-python3-3.11.6/bin/python"),
    ("k8s-type", "type: kubernetes.io/service-account-token"),
    ("already-redacted", "password=[REDACTED:password_assignment] and [REDACTED:github_token]"),
    ("token-count-prose", "The tokenizer: counts tokens=1024 per chunk and secret sauce is caching."),
]


@pytest.mark.parametrize(("text", "cls", "secret"), [p[1:] for p in POSITIVES], ids=[p[0] for p in POSITIVES])
def test_true_positive(text: str, cls: str, secret: str) -> None:
    findings = find_secrets(text)
    assert [(f.cls, text[f.start : f.end]) for f in findings] == [(cls, secret)]


@pytest.mark.parametrize("text", [p[1] for p in LOOKALIKES], ids=[p[0] for p in LOOKALIKES])
def test_lookalike_is_not_a_secret(text: str) -> None:
    assert find_secrets(text) == []


def test_corpus_sizes_and_coverage() -> None:
    assert len(POSITIVES) >= 30
    assert len(LOOKALIKES) >= 30
    assert len({p[1] for p in POSITIVES}) == len(POSITIVES)
    classes = {p[2] for p in POSITIVES}
    for required in (
        "aws_access_key",
        "aws_secret_key",
        "github_token",
        "private_key",
        "jwt",
        "url_password",
        "password_assignment",
        "high_entropy",
        "slack_webhook",
        "pypi_token",
        "twilio_key",
    ):
        assert required in classes


# --- redaction


def test_redact_keeps_surroundings_and_labels_value() -> None:
    assert redact("before DB_PASSWORD=Tr0ub4dor&3 after") == (
        "before DB_PASSWORD=[REDACTED:password_assignment] after"
    )
    assert redact("postgres://app:Vq3rT9zLm2@db.internal:5432/app") == (
        "postgres://app:[REDACTED:url_password]@db.internal:5432/app"
    )
    assert redact(f"Use {GHP} for CI.") == "Use [REDACTED:github_token] for CI."
    assert redact("db:\n  password: 'N7q!xR2#vL'\n") == "db:\n  password: '[REDACTED:password_assignment]'\n"


def test_redact_private_key_block_whole() -> None:
    text = f"key:\n{PEM_RSA}\nthanks"
    assert redact(text) == "key:\n[REDACTED:private_key]\nthanks"


@pytest.mark.parametrize("text", [p[1] for p in POSITIVES], ids=[p[0] for p in POSITIVES])
def test_redact_is_idempotent_and_clean(text: str) -> None:
    once = redact(text)
    assert "[REDACTED:" in once
    assert find_secrets(once) == []
    assert redact(once) == once
    assert redact(text) == once  # stable


def test_redact_leaves_clean_text_alone() -> None:
    for _name, text in LOOKALIKES:
        assert redact(text) == text


def test_redact_with_given_findings_replaces_exactly_those() -> None:
    text = f"a={AWS_ID} b={GHP}"
    findings = find_secrets(text)
    assert [f.cls for f in findings] == ["aws_access_key", "github_token"]
    assert redact(text, findings[:1]) == f"a=[REDACTED:aws_access_key] b={GHP}"
    assert redact(text, []) == text


def test_findings_sorted_non_overlapping_with_lines_and_masked_preview() -> None:
    text = f"first line\nexport GH_TOKEN={GHP}\n\nDB_PASSWORD=Tr0ub4dor&3\n{PEM_OPENSSH}\n"
    findings = find_secrets(text)
    assert [(f.cls, f.line) for f in findings] == [
        ("github_token", 2),
        ("password_assignment", 4),
        ("private_key", 5),
    ]
    starts = [f.start for f in findings]
    assert starts == sorted(starts)
    assert all(a.end <= b.start for a, b in itertools.pairwise(findings))
    gh = findings[0]
    assert gh.preview == "ghp_…"
    assert GHP not in gh.preview
    assert findings[1].preview == "Tr…"
    assert isinstance(gh, SecretFinding)
    assert gh.to_dict()["cls"] == "github_token"


def test_glued_secrets_are_all_found_in_one_call() -> None:
    # the Slack token only starts a token of its own once the AWS key glued to it is redacted
    slack = f"xoxp-{rnd('g1', 11, string.digits)}-{rnd('g2', 12, string.digits)}-{rnd('g3', 32, HEX)}"
    text = f"aws_access_key_id = {AWS_ID}{slack}"
    findings = find_secrets(text)
    assert [(f.cls, text[f.start : f.end]) for f in findings] == [
        ("aws_access_key", AWS_ID),
        ("slack_token", slack),
    ]
    assert redact(text, findings) == "aws_access_key_id = [REDACTED:aws_access_key][REDACTED:slack_token]"


def test_specific_rule_wins_over_generic_assignment() -> None:
    assert [f.cls for f in find_secrets(f"token={GHP}")] == ["github_token"]
    assert redact(f"token={GHP}") == "token=[REDACTED:github_token]"


def test_shannon_entropy() -> None:
    assert shannon_entropy("") == 0.0
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == pytest.approx(2.0)


# --- properties

_PIECES = [p[1] for p in POSITIVES] + [p[1] for p in LOOKALIKES]
_SEPARATORS = ["", " ", "\n", "=", ":", '"', "'", "@", "/", "_", "-", ".", "x"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_PIECES),
            st.sampled_from(_SEPARATORS),
            st.text(alphabet=st.characters(codec="utf-8"), max_size=30),
            st.text(alphabet=ALNUM + "+/=_-:@.$ \n", max_size=40),
        ),
        max_size=8,
    ).map("".join)
)
def test_redaction_is_a_fixpoint(text: str) -> None:
    once = redact(text)
    assert find_secrets(once) == []
    assert redact(once) == once
    assert redact(text, find_secrets(text)) == once  # one pass with the findings is already clean


# --- the needle pre-filter (a rule whose needles a text lacks is skipped): never changes a finding

_FOLD_PIECES = ["\u0130", "\u0131", "\u017f", "\u212a", "é", "ß", "Σ", "日本"]


def _scan_every_rule(monkeypatch: pytest.MonkeyPatch, text: str) -> list[SecretFinding]:
    with monkeypatch.context() as patch:
        patch.setattr(secrets._Rule, "may_match", lambda self, text, lowered: True)
        return find_secrets(text)


def test_fold_extras_are_every_non_ascii_character_case_insensitive_ascii_matches() -> None:
    ignorecase_letter = re.compile("(?i)[a-z]")
    extras = {chr(cp) for cp in range(128, 0x110000) if ignorecase_letter.fullmatch(chr(cp))}
    assert extras == set(secrets._FOLD_EXTRAS)


def test_every_rule_can_only_match_a_text_holding_one_of_its_needles() -> None:
    """Each positive example of a rule holds one of that rule's needles (folded where the rule says)."""
    by_cls: dict[str, list[secrets._Rule]] = {}
    for rule in secrets._rules():
        by_cls.setdefault(rule.cls, []).append(rule)
    by_cls["secret_assignment"] = by_cls["password_assignment"]
    for _name, text, cls, _secret in POSITIVES:
        if cls == "high_entropy":
            continue
        assert any(rule.may_match(text, text.lower()) for rule in by_cls[cls]), (cls, text)


@pytest.mark.parametrize("text", [p[1] for p in POSITIVES] + [p[1] for p in LOOKALIKES])
def test_the_prefilter_finds_what_every_rule_finds(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    assert find_secrets(text) == _scan_every_rule(monkeypatch, text)
    for piece in _FOLD_PIECES:  # characters (?i) folds to ASCII letters, and other non-ASCII text
        glued = text.replace("s", piece, 1).replace("k", "\u212a", 1)
        assert find_secrets(glued) == _scan_every_rule(monkeypatch, glued)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_PIECES),
            st.sampled_from(_SEPARATORS + _FOLD_PIECES),
            st.text(alphabet=st.characters(codec="utf-8"), max_size=30),
            st.text(alphabet=ALNUM + "+/=_-:@.$ \n\u017f\u212a\u0130\u0131", max_size=40),
        ),
        max_size=8,
    ).map("".join)
)
def test_the_prefilter_never_changes_a_finding(text: str) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(secrets._Rule, "may_match", lambda self, text, lowered: True)
        every = find_secrets(text)
    assert find_secrets(text) == every


# --- every field of a memory file


def test_file_secrets_names_the_field_and_line_and_reads_yaml_escapes_and_comments() -> None:
    from ee.policy.secrets import file_secrets

    escaped = GHP.replace("g", "\\x67", 1)  # YAML reads "\x67hp_…" as "ghp_…"
    text = (
        "---\nid: mem_a\nsource: https://deploy:Hq7Zr2Lw9Xp@git.internal/r.git\n"
        f'# old: {AWS_ID}\ntags: [ci, "{escaped}"]\n---\nNotes.\nDB_PASSWORD=Tr0ub4dor&3\n'
    )
    found = {(f.field, f.cls, f.line) for f in file_secrets(text, "memories/a.md")}
    assert ("source", "url_password", 3) in found
    assert ("source", "aws_access_key", 4) in found  # a YAML comment: the key above it
    assert ("tags", "github_token", 5) in found  # only the decoded value shows it
    assert ("body", "password_assignment", 8) in found


def test_guard_scans_values_with_their_keys_and_masks_them_in_place() -> None:
    from ee.errors import SecretFound
    from ee.policy.secrets import guard

    fields = {"body": "Notes.", "extra": {"db": {"password": "Tr0ub4dor&3x"}}, "tags": ["ci"]}
    with pytest.raises(SecretFound) as refused:
        guard(fields)
    assert "password_assignment in extra.db.password" in refused.value.message
    masked, classes = guard(fields, redact=True)
    assert masked["extra"] == {"db": {"password": "[REDACTED:password_assignment]"}}
    assert classes == ["password_assignment"]
    with pytest.raises(SecretFound) as stuck:
        guard({"body": "Notes.", "id": GHP}, redact=True)
    assert "github_token in id" in stuck.value.message
    assert "cannot be masked" in stuck.value.hint


# --- disguises and one-word passwords (a red-team sweep found each stored and committed)

_FULLWIDTH = str.maketrans({c: chr(ord(c) + 0xFEE0) for c in string.ascii_letters + string.digits})

# (case id, text, expected class, the part of the text that must be masked)
DISGUISED: list[tuple[str, str, str, str]] = [
    ("split-token", f"gh split {GHP[:20]}\n{GHP[20:]}", "github_token", f"{GHP[:20]}\n{GHP[20:]}"),
    ("split-indented", f"token:\n  {GHP[:12]}\n  {GHP[12:]}", "github_token", f"{GHP[:12]}\n  {GHP[12:]}"),
    (
        "base64",
        f"b64 {base64.b64encode(GHP.encode()).decode()}",
        "github_token",
        base64.b64encode(GHP.encode()).decode(),
    ),
    ("base64url", f"b64 {b64url(GHP.encode())} end", "github_token", b64url(GHP.encode())),
    ("hex", f"hex {GHP.encode().hex()}", "github_token", GHP.encode().hex()),
    ("zero-width", f"g\u200dhp_{GHP[4:]} x", "github_token", f"g\u200dhp_{GHP[4:]}"),
    ("soft-hyphen", f"{GHP[:10]}\u00ad{GHP[10:]}", "github_token", f"{GHP[:10]}\u00ad{GHP[10:]}"),
    ("fullwidth", f"use {GHP.translate(_FULLWIDTH)}", "github_token", GHP.translate(_FULLWIDTH)),
    (
        "pem-header-split",
        "-----BEGIN RSA PRIVATE\nKEY-----\n" + "\n".join(rnd(f"split{i}", 64, B64) for i in range(3)),
        "private_key",
        "-----BEGIN RSA PRIVATE\nKEY-----\n" + "\n".join(rnd(f"split{i}", 64, B64) for i in range(3)),
    ),
    ("curl-user", "curl -u admin:hunter2 https://x", "password_flag", "hunter2"),
    ("curl-user-long", "curl --user deploy:Dp7qLm2x https://x", "password_flag", "Dp7qLm2x"),
]

DISGUISE_LOOKALIKES: list[tuple[str, str]] = [
    ("base64-text", f"payload {base64.b64encode(b'the quick brown fox jumps over it').decode()} decodes"),
    ("hex-text", f"hex {b'just some ordinary words here'.hex()}"),
    ("line-ends-with-prefix", "GitHub tokens start with ghp_\nAnd the rest is random letters and digits."),
    ("split-prose", "a very long identifier_name_here\ncontinues_on_the_next_line_without_digits"),
    ("password-prose", "Rotate the password every quarter; never write it in a memory."),
    ("password-prose-colon", "password: stored in the team vault"),
    ("password-placeholder-angle", "password=<your password>"),
    ("password-placeholder-var", "password=${DB_PASSWORD}"),
    ("password-required", "password: required"),
    ("password-in-call", 'connect(host="db", password="correcthorse")'),
    # One plain word under a password key is documentation's example: the guard's documented trade-off
    # (ee/policy/secrets.py; refusing them refused 1 page of technical documentation in 1,338)
    ("password-env-word", "PASSWORD=correcthorsebatterystaple"),
    ("password-yaml-word", "password: letmein"),
    ("password-doc-example", "password: 0penstack"),
    ("password-identifier", "password = new_password"),
    ("curl-example-user", "curl -u user:password https://x"),
    ("curl-vars", 'curl -u "$USER:$TOKEN" https://x'),
    ("docker-uid", "docker run -u 1000:1000 image"),
    ("fullwidth-prose", "ｆｕｌｌｗｉｄｔｈ ｔｅｘｔ is just text"),
    ("zero-width-prose", "zero\u200bwidth space in prose"),
]


@pytest.mark.parametrize(("text", "cls", "secret"), [p[1:] for p in DISGUISED], ids=[p[0] for p in DISGUISED])
def test_disguised_secret_is_found_and_masked_whole(text: str, cls: str, secret: str) -> None:
    findings = find_secrets(text)
    assert [(f.cls, text[f.start : f.end]) for f in findings] == [(cls, secret)]
    masked = redact(text)
    assert find_secrets(masked) == []
    assert not any(part in masked for part in (GHP[:8], GHP[-8:], secret))


@pytest.mark.parametrize("text", [p[1] for p in DISGUISE_LOOKALIKES], ids=[p[0] for p in DISGUISE_LOOKALIKES])
def test_disguise_lookalike_is_not_a_secret(text: str) -> None:
    assert find_secrets(text) == []
