"""Credentials kept out of what the sweep and the trackers print, log, track and save. Storage and tracking URLs
may carry a password (`postgresql+psycopg://USER:PASSWORD@HOST/DB`, `http://USER:PASSWORD@HOST:PORT`,
`...?password=...`); `redact` hides it in a URL, or in a message that quotes one (a database driver's or MLflow's
error), and `one_line` is an error as one printable line, so redacted."""

from __future__ import annotations

import re

HIDDEN = "***"
# scheme://user:PASSWORD@ (the password runs to the last @ before the host's end, as urlsplit reads it)
_USER_INFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*):[^\s/?#]*@")
# ?password=VALUE, &token=VALUE, ;api_key=VALUE ...: the query parameters that name a secret
_QUERY = re.compile(
    r"(?P<key>[?&;][^=&#\s]*(?:pass|pwd|secret|token|key|credential|signature)[^=&#\s]*=)[^&#\s'\"]*", re.I
)


def redact(text: str) -> str:
    """`text` with each URL's password (of its user info and of password-like query parameters) as `***`:
    `postgresql+psycopg://alice:s3cret@db/optuna` -> `postgresql+psycopg://alice:***@db/optuna`."""
    text = _USER_INFO.sub(rf"\g<head>:{HIDDEN}@", str(text))
    return _QUERY.sub(rf"\g<key>{HIDDEN}", text)


def one_line(error: BaseException, limit: int = 300) -> str:
    """An error as one short line: its type and the first line of its message, redacted."""
    text = redact(str(error)).strip().splitlines()
    text = f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
