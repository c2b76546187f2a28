"""Planted secrets, one or more for every detect-secrets plugin type, that the full scan must report.

Each entry is (detector type, a line of code carrying the secret, a file name
to put it in). Values are random (seeded), so no heuristic filter mistakes them
for ids or sequences. `test_secret_gate` first checks that detect-secrets
itself (every line scanned, no pre-filter) reports each one, so the corpus
cannot rot into lines nothing finds; then that the pre-filtered scan reports
the same.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string

_rng = random.Random(20260601)
_ALNUM = string.ascii_letters + string.digits
_B64 = _ALNUM + "+/"
_LOWER_ALNUM = string.ascii_lowercase + string.digits


def _pick(alphabet: str, count: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(count))


def _hex(count: int) -> str:
    return _pick("0123456789abcdef", count)


def _jwt() -> str:
    def part(data: dict[str, object]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return (
        f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': _pick(string.digits, 8)})}.{_pick(_ALNUM, 43)}"
    )


#: (detector type, line, file name). Several lines per type where a plugin has several patterns.
PLANTED: list[tuple[str, str, str]] = [
    (
        "AWS Access Key",
        f'AWS_KEY_ID = "AKIA{_pick(string.ascii_uppercase + string.digits, 16)}"',
        "settings.py",
    ),
    ("AWS Access Key", f'aws_secret_key = "{_pick(_B64, 40)}"', "deploy.py"),
    ("Artifactory Credentials", f"artifactory: AKC{_pick(_ALNUM, 60)}", "ci.yml"),
    ("Artifactory Credentials", f'token = "AP6{_pick(_ALNUM, 20)}"', "settings.py"),
    ("Azure Storage Account access key", f"AccountKey={_pick(_B64, 86)}==", "azure.cfg"),
    (
        "Basic Auth Credentials",
        f"DATABASE_URL = 'postgres://admin:{_pick(_ALNUM, 12)}@db.internal:5432/app'",
        "config.py",
    ),
    ("Cloudant Credentials", f'cloudant_password = "{_hex(64)}"', "cloud.py"),
    ("Cloudant Credentials", f"url = 'https://acct:{_hex(64)}@acct.cloudant.com'", "cloud.py"),
    ("Discord Bot Token", f'BOT = "M{_pick(_ALNUM, 23)}.{_pick(_ALNUM, 6)}.{_pick(_ALNUM, 27)}"', "bot.py"),
    ("GitHub Token", f'GITHUB_TOKEN = "ghp_{_pick(_ALNUM, 36)}"', "release.py"),
    ("GitLab Token", f"export GITLAB=glpat-{_pick(_ALNUM, 20)}", "deploy.sh"),
    ("Base64 High Entropy String", f'SIGNING = "{_pick(_B64, 44)}"', "keys.py"),
    ("Hex High Entropy String", f"salt = '{_hex(40)}'", "hashing.py"),
    ("IBM Cloud IAM Key", f'ibm_cloud_iam_key = "{_pick(_ALNUM, 44)}"', "ibm.py"),
    ("IBM COS HMAC Credentials", f'cos_hmac_secret_access_key = "{_hex(48)}"', "ibm.py"),
    ("JSON Web Token", f"Authorization: Bearer {_jwt()}", "request.txt"),
    ("Secret Keyword", f'password = "{_pick(_ALNUM, 14)}"', "db.py"),
    ("Secret Keyword", f"api_key: {_pick(_ALNUM, 14)}", "settings.yaml"),
    ("Secret Keyword", f"db_pass = {_pick(_ALNUM, 14)}", "app.ini"),
    ("Mailchimp Access Key", f"MAILCHIMP = '{_pick(_LOWER_ALNUM, 32)}-us12'", "mail.py"),
    ("NPM tokens", f"//registry.npmjs.org/:_authToken=npm_{_pick(_ALNUM, 36)}", ".npmrc"),
    ("OpenAI Token", f'OPENAI = "sk-{_pick(_ALNUM, 20)}T3BlbkFJ{_pick(_ALNUM, 20)}"', "llm.py"),
    ("Private Key", "-----BEGIN RSA PRIVATE KEY-----", "id_rsa"),
    ("Private Key", "PuTTY-User-Key-File-2: ssh-rsa", "key.ppk"),
    ("PyPI Token", f"password = pypi-AgEIcHlwaS5vcmc{_pick(_ALNUM, 80)}", ".pypirc"),
    ("SendGrid API Key", f'SENDGRID = "SG.{_pick(_ALNUM, 22)}.{_pick(_ALNUM, 43)}"', "mail.py"),
    (
        "Slack Token",
        f"SLACK = 'xoxb-{_pick(string.digits, 11)}-{_pick(string.digits, 12)}-{_pick(_LOWER_ALNUM, 24)}'",
        "chat.py",
    ),
    (
        "Slack Token",
        f"HOOK = 'https://hooks.slack.com/services/T{_pick(_ALNUM, 8)}/B{_pick(_ALNUM, 8)}/{_pick(_ALNUM, 24)}'",
        "chat.py",
    ),
    ("SoftLayer Credentials", f'softlayer_api_key = "{_pick(_LOWER_ALNUM, 64)}"', "sl.py"),
    (
        "SoftLayer Credentials",
        f"endpoint = 'https://api.softlayer.com/soap/v3/{_pick(_LOWER_ALNUM, 64)}'",
        "sl.py",
    ),
    ("Square OAuth Secret", f'SQUARE = "sq0csp-{_pick(_ALNUM, 43)}"', "pay.py"),
    ("Stripe Access Key", f'STRIPE = "sk_live_{_pick(_ALNUM, 24)}"', "pay.py"),
    ("Telegram Bot Token", f"TELEGRAM = '{_pick(string.digits, 9)}:{_pick(_ALNUM, 35)}'", "bot.py"),
    ("Twilio API Key", f"TWILIO_SID = 'AC{_pick(_LOWER_ALNUM, 32)}'", "sms.py"),
    ("Twilio API Key", f"TWILIO_KEY = 'SK{_pick(_LOWER_ALNUM, 32)}'", "sms.py"),
]
# The same tokens bare (no quotes, no keyword), so that no other plugin's gate lets their line through.
_TOKEN_TYPES = {
    "AWS Access Key", "Discord Bot Token", "GitHub Token", "GitLab Token", "JSON Web Token", "Mailchimp Access Key",
    "OpenAI Token", "PyPI Token", "SendGrid API Key", "Slack Token", "Square OAuth Secret", "Stripe Access Key",
    "Telegram Bot Token", "Twilio API Key", "Artifactory Credentials",
}  # fmt: skip
PLANTED += [
    (kind, "echo " + re.split(r"""[=:] ?['"]?|Bearer """, line, maxsplit=1)[-1].strip("'\""), "run.sh")
    for kind, line, _ in list(PLANTED)
    if kind in _TOKEN_TYPES and "hooks.slack" not in line and "aws_secret" not in line
]
# Not here: "Public IP (ipv4)". Its matches hold no letter, so detect-secrets' default filter
# is_not_alphanumeric_string drops every one of them (and repogym switches the plugin off anyway).

#: Code-shaped filler: words the gate looks at (key, pass, token, secret, quotes, URLs) without a secret.
FILLER = [
    "def test_monkeypatch_key(monkeypatch):",
    "    pass",
    "    token = next(tokens)",
    '    assert config.getini("secret_sauce") == ""',
    "    url = 'https://example.org/docs'",
    "    cache_key = (result, my_cache_key, None)",
    "    # pragma: no cover",
    '    name = "test_parametrize_iterator_class_multiple"',
    "    return {'passwd': prompt()}",
    "",
]
