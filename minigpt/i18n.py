"""The language of the graded exercises' feedback: English by default, Spanish with ``MINIGPT_LANG=es``.

The messages are Python's stdlib `gettext` catalogs shipped with the package
(``minigpt/locales/<lang>/LC_MESSAGES/minigpt.mo``, compiled from the ``.po`` next to it by
``scripts/book/grader_messages.py``). `_` translates a message for the language ``MINIGPT_LANG`` names *when it is
called*, so a notebook that sets ``os.environ["MINIGPT_LANG"] = "es"`` gets Spanish from its next ``check``.
Without the variable (or with a language that has no catalog) every message is the English msgid, unchanged.

A message with variable parts is a template (``_("expected {expected} bytes, got {got}").format(...)``): the
msgid is the template, the names, numbers and reprs are filled in afterwards. Numbers go through `fmt_num`,
which writes them the way the language does (Spanish: decimal comma, digits grouped with a narrow no-break space
from five digits on: ``32 768``, ``2048``, ``3,95``). `N_` marks a message whose translation happens later (a
question's hint, the grading child's messages, which the parent translates with `translate_known`).
"""

from __future__ import annotations

import gettext
import os
import re
from collections.abc import Iterable
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

LANG_ENV = "MINIGPT_LANG"
DOMAIN = "minigpt"
LOCALE_DIR = Path(__file__).resolve().parent / "locales"
DEFAULT = "en"
NNBSP = "\u202f"  # narrow no-break space: the Spanish thousands separator (RAE / SI)


def language() -> str:
    """The language of the messages now: ``MINIGPT_LANG`` ("es", "es_ES.UTF-8", ...) if it has a catalog, else "en"."""
    value = os.environ.get(LANG_ENV, "").strip().lower()
    code = re.split(r"[_.@-]", value, maxsplit=1)[0] if value else DEFAULT
    return code if code != DEFAULT and (LOCALE_DIR / code / "LC_MESSAGES" / f"{DOMAIN}.mo").is_file() else DEFAULT


@lru_cache(maxsize=8)
def _catalog(code: str) -> gettext.NullTranslations:
    return gettext.translation(DOMAIN, localedir=str(LOCALE_DIR), languages=[code], fallback=True)


def _(message: str) -> str:
    """`message` in the current language (the English msgid itself when there is no translation)."""
    return gettext_in(language(), message)


def gettext_in(code: str, message: str) -> str:
    """`message` in the language `code` whatever ``MINIGPT_LANG`` says (a Spanish page built by Sphinx)."""
    return message if code == DEFAULT else _catalog(code).gettext(message)


def N_(message: str) -> str:  # noqa: N802 - the gettext convention for a message marked, translated later
    """Mark `message` for the catalog without translating it now (it is translated where it is shown)."""
    return message


def _group(digits: str) -> str:
    if len(digits) < 5:
        return digits
    head = len(digits) % 3 or 3
    return digits[:head] + "".join(NNBSP + digits[i:i + 3] for i in range(head, len(digits), 3))


_NUMBER = re.compile(r"^([+-]?)(\d+)((?:\.\d*)?)((?:[eE][+-]?\d+)?)(.*)$", re.S)


def spanish_number(text: str) -> str:
    """A number written by Python (``12,345.5``, ``3.95``, ``1e-05``, ``inf``) written the Spanish way."""
    m = _NUMBER.match(text.replace(",", ""))
    if not m:
        return text
    sign, whole, frac, exp, rest = m.groups()
    return sign + _group(whole) + frac.replace(".", ",") + exp + rest


def fmt_num(value: Any, spec: str = ",") -> str:
    """`value` formatted with `spec` (``format(value, spec)`` in English: ``","`` gives ``32,768``) and, in
    Spanish, with a decimal comma and narrow no-break spaces between thousands from five digits on."""
    text = format(value, spec)
    return text if language() == DEFAULT else spanish_number(text)


def _pattern(msgid: str) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)(?:![rsa])?(?::[^{}]*)?\}", msgid)
    # a field named n or n_... is a count (digits), type or record a class name; any other may hold anything
    regex = "".join(re.escape(p) if i % 2 == 0 else rf"(?P<{p}>\d+)" if p == "n" or p.startswith("n_")
                    else rf"(?P<{p}>[A-Za-z_]\w*)" if p in ("type", "record") else f"(?P<{p}>.*?)"
                    for i, p in enumerate(parts))
    return re.compile(regex + r"\Z", re.S)


@cache
def _patterns(msgids: tuple[str, ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((m, _pattern(m)) for m in msgids)


def translate_known(message: str, msgids: Iterable[str]) -> str:
    """`message`, an English text made from one of `msgids` (templates with ``{name}`` fields) elsewhere (the
    grading child, an exception), in the current language: the template is recognised, its translation filled
    with the same values. A text that matches none is returned unchanged."""
    if language() == DEFAULT or not isinstance(message, str):
        return message
    msgids = tuple(msgids)
    for msgid, pattern in _patterns(msgids):
        m = pattern.match(message)
        if m:
            values = {k: translate_known(v, msgids) for k, v in m.groupdict().items()}  # "got a tensor", ...
            return _(msgid).format(**values)
    return message
