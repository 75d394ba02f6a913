"""The lexical tokenizer shared by :class:`HashingEmbedder` and :class:`BM25Index`."""

from __future__ import annotations

import re

__all__ = ["tokenize"]

# Runs of letters and digits (Unicode-aware); everything else, including "_", separates words.
_RUN = re.compile(r"[^\W_]+")
# camelCase / PascalCase parts of an ASCII run.
_CAMEL = re.compile(
    r"[A-Z]{2,}s(?![a-z])"  # plural acronym: IDs, URLs
    r"|[A-Z]+\d*(?=[A-Z][a-z])"  # acronym before a capitalised word: HTTPServer -> HTTP
    r"|[A-Z]?[a-z]+\d*"  # word, digits stay attached: get, User, v2
    r"|[A-Z]+\d*"  # trailing acronym: ID, S3
    r"|\d+"
)


def tokenize(text: str) -> list[str]:
    """Lower-cased words of ``text``, split on non-alphanumerics, snake_case and camelCase.

    >>> tokenize("getUserIDs via HTTPServer: snake_case, OAuth2")
    ['get', 'user', 'ids', 'via', 'http', 'server', 'snake', 'case', 'o', 'auth2']
    """
    tokens: list[str] = []
    for run in _RUN.findall(text):
        if run.isascii() and not (run.islower() or run.isupper() or run.isdigit()):
            tokens.extend(part.lower() for part in _CAMEL.findall(run))
        else:
            tokens.append(run.lower())
    return tokens
