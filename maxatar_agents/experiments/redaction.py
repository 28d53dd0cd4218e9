"""Credentials kept out of what the sweep and the trackers print, log, track and save. Storage and tracking URLs
may carry a password (`postgresql+psycopg://USER:PASSWORD@HOST/DB`, `http://USER:PASSWORD@HOST:PORT`,
`...?password=...`); `redact` hides it in a URL, or in a message that quotes one (a database driver's or MLflow's
error), and `one_line` is an error as one printable line, so redacted."""

from __future__ import annotations

import re

HIDDEN = "***"
# scheme://USERINFO@: the user info runs to the last @ of the URL (as SQLAlchemy and urlsplit read a password that
# holds '/', '?', '#' or '@'), so a message quoting the URL is cut there too.
_USER_INFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*)://(?P<info>[^\s'\"]*)@")
# ?password=VALUE, &token=VALUE, #auth=VALUE, ;api_key=VALUE ...: the query and fragment parameters naming a secret
_QUERY = re.compile(
    r"(?P<key>[?&;#][^=&#\s]*(?:pass|pw|auth|secret|token|key|credential|signature)[^=&#\s]*=)[^&#\s'\"]*", re.I
)
# Schemes whose user info alone is a credential (a token: `https://TOKEN@host`); a database's is a user name.
_TOKEN_SCHEMES = ("http", "https")


def _user_info(match: re.Match) -> str:
    scheme, (user, has_password, _) = match["scheme"], match["info"].partition(":")
    if scheme.lower() in _TOKEN_SCHEMES:  # `TOKEN@`, `TOKEN:x-oauth-basic@`: the user may be the secret
        return f"{scheme}://{HIDDEN}@"
    return f"{scheme}://{user}:{HIDDEN}@" if has_password else match[0]


def redact(text: str) -> str:
    """`text` with each URL's credentials as `***`: the password of its user info (to the last @), the whole user
    info of an http(s) URL (a token may be its user), and password-like query and fragment parameters:
    `postgresql+psycopg://alice:s3cr/et@db/optuna` -> `postgresql+psycopg://alice:***@db/optuna`."""
    return _QUERY.sub(rf"\g<key>{HIDDEN}", _USER_INFO.sub(_user_info, str(text)))


def one_line(error: BaseException, limit: int = 300) -> str:
    """An error as one short line: its type and the first line of its message, redacted."""
    text = redact(str(error)).strip().splitlines()
    text = f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
