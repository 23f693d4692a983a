"""How an answer's text is folded before the rubric reads it: Unicode forms, invisible characters, signs, markup."""
from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

# Characters that change no word a reader sees but hide the rubric's words from a pattern (a probe
# sweep: "ma\u200bsk" named no mask, an answer with a zero-width space between every letter scored 0,
# a keyword list so spaced was not flagged, and a homoglyph copy of the reference was no copy):
# format characters (zero-width spaces and joiners, the soft hyphen, direction marks, the BOM: Unicode
# category Cf), combining marks typed on their own (an accent stacked on a letter; U+0338, the stroke
# of "≠" once decomposed, is kept) and variation selectors are dropped; a pictograph (emoji) is a space;
# a Cyrillic letter drawn like a Latin one ("mеаn" with Cyrillic е and а) is that Latin letter, in an
# answer holding no other Cyrillic letter (one written in Russian keeps its letters). Each is one
# character for none or one, so a quote still maps back to the student's own text. Greek letters stay:
# μ, σ, ε and δ are the rubric's own signs.
INVISIBLE_FOLD = True
_INVISIBLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                        "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U000e0000-\U000e0fff"
                        "\u0300-\u0337\u0339-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
_PICTOGRAPH = re.compile("[\U0001f000-\U0001f448\U0001f44a-\U0001f7ff\U0001f900-\U0001faff\u2600-\u26ff"
                         "\u2728\u2b50\u2b55]")
_CYRILLIC_LIKE = {"а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
                  "с": "c", "т": "t", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "һ": "h",
                  "ӏ": "l", "ԛ": "q", "ԝ": "w", "ү": "y", "ɡ": "g"}
_HOMOGLYPHS = str.maketrans(_CYRILLIC_LIKE)
_CYRILLIC_LIKE_IN = re.compile("[" + "".join(_CYRILLIC_LIKE) + "]")
_CYRILLIC_OTHER = re.compile("[\u0400-\u04ff\u0500-\u052f](?<![" + "".join(_CYRILLIC_LIKE) + "])")


def _homoglyphs(folded: str) -> bool:
    """Whether the (lower-cased) text's Cyrillic letters are all drawn like Latin ones: a disguise."""
    return bool(_CYRILLIC_LIKE_IN.search(folded)) and not _CYRILLIC_OTHER.search(folded)


def normalise(text: str, homoglyphs: bool | None = None) -> str:
    """NFKC folds full-width forms and compatibility characters (μ, ² → μ, 2), then lower-case; with
    INVISIBLE_FOLD, invisible characters and stray combining marks go, pictographs are spaces and
    Latin-looking Cyrillic letters Latin ones (`homoglyphs`: decided from `text` when None)."""
    text = text.replace("\x00", "")
    if not INVISIBLE_FOLD:
        return unicodedata.normalize("NFKC", text).lower()
    folded = unicodedata.normalize("NFKC", _INVISIBLE.sub("", text)).lower()
    folded = _PICTOGRAPH.sub(" ", folded)
    if homoglyphs if homoglyphs is not None else _homoglyphs(folded):
        folded = folded.translate(_HOMOGLYPHS)
    return folded


# Signs that NFKC leaves alone but that students type for the same thing: dashes used as a minus
# ("0 – 2 = –2"), division signs, and arrows of every shape ("⟶", "➜", "⟹") for the rubric's "→".
# One character for one, so that a quote still maps back to the student's own text.
SIGN_FOLD = True
_SIGNS = str.maketrans({"‐": "-", "‑": "-", "‒": "-", "–": "-", "﹣": "-", "÷": "/", "∕": "/",
                        **{a: "→" for a in "⟶⟹⇨⇾➔➜➝➞➡↦⟼⇛⇉⭢🡒👉"}})


_HAS_SIGN = re.compile("[" + re.escape("".join(map(chr, _SIGNS))) + "]")  # a C-level scan: most answers have none


def _fold_signs(text: str, homoglyphs: bool | None = None) -> str:
    folded = normalise(text, homoglyphs)
    return folded.translate(_SIGNS) if SIGN_FOLD and _HAS_SIGN.search(folded) else folded


def _fold_answer(text: str) -> str:
    return _fold_markup(_fold_signs(text))[0]


# Markup that students type around the same words (phrasing sweep, after the fifth pass), taken out
# before the rubric reads the answer: a list marker at a line's start is no minus ("- mean = sum / N"
# does not say −mean); code-span backticks and emphasis stars are no part of a phrase ("we must `mask`
# them again", "**重新** mask"; a `*` run between two operands, "(block-n)*mean^2", "mean**2", or
# between two spaces stays an operator); a dash run before ">" is an arrow ("——>", "—>": Chinese input
# methods type "——" for a dash); LaTeX's Greek letters, signs and braced exponents are the rubric's
# signs ("$-\mu$", "\mu^{2}", "\cdot", "\to"). Each kept character remembers where it came from,
# so that a quote still shows the student's own text.
MARKUP_FOLD = True
_LIST_MARKER = re.compile(r"(?m)^[ \t]*[-*+](?=[ \t])")
_EMPHASIS = re.compile(r"\*{1,3}")
_OPERAND_LEFT = re.compile(r"[a-z0-9_)\]μσ]")
_OPERAND_RIGHT = re.compile(r"[a-z0-9_(\[μσ]")
_BACKTICKS = re.compile("`+")
_DASH_ARROW = re.compile(r"[—―─]+>")
_LATEX_SIGN = re.compile(r"\\(mu|sigma|cdot|times|to|rightarrow|longrightarrow|implies|neq|ne|approx)(?![a-z])")
_LATEX_SIGNS = {"mu": "μ", "sigma": "σ", "cdot": "·", "times": "×", "to": "→", "rightarrow": "→",
                "longrightarrow": "→", "implies": "→", "neq": "≠", "ne": "≠", "approx": "≈"}
_LATEX_BRACES = re.compile(r"(?<=[\^_])\{([^{}\n]{1,12})\}")
# More of LaTeX, as students type it in markdown answers (branch misc11): a fraction is a division
# ("\frac{n_a n_b}{n_a + n_b}" is n_a n_b/(n_a + n_b): the numerator bracketed only where it is a sum or a
# difference), \bar{x} is the mean ("\bar x_b" is mean_b), \text{…} and \mathrm{…} are their words, and
# the named signs and functions are the rubric's (\infty inf, \sum Σ, \delta δ, \le ≤, \ll ≪, \max max, …);
# \left, \right and LaTeX's spaces go. Off: only the signs above.
LATEX_FOLD = True
_LATEX_NAMED = re.compile(r"(?:\\(infty|sum|delta|Delta|lambda|epsilon|varepsilon|leq?|geq?|ll|gg|max|min|exp|log|"
                          r"sqrt|left|right|quad|qquad)(?![a-zA-Z])|\\([,;!]))")
_LATEX_NAMES = {"infty": "inf", "sum": "Σ", "delta": "δ", "Delta": "Δ", "lambda": "λ", "epsilon": "ε",
                "varepsilon": "ε", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ll": "≪", "gg": "≫", "max": "max",
                "min": "min", "exp": "exp", "log": "log", "sqrt": "sqrt", "left": "", "right": "", "quad": " ",
                "qquad": " ", ",": " ", ";": " ", "!": ""}
_LATEX_WORDS = re.compile(r"\\(?:text|mathrm|mathit|mathbf|operatorname)\s*\{([^{}\n]{0,40})\}")
_LATEX_BAR = re.compile(r"\\(?:bar|overline)\s*(?:\{\s*([a-z])\s*\}|([a-z])(?![a-z]))")
_LATEX_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}\n]{1,60})\}\s*\{([^{}\n]{1,60})\}")


def _fraction(m: re.Match[str]) -> str:
    top, bottom = m.group(1).strip(), m.group(2).strip()
    return (f"({top})" if re.search(r"[-+−]", top) else top) + f"/({bottom})"


# e to a power is exp of it ("e^(0−3)", "e**(x − m)", "e^{x-m}"): the rubric writes exp(…) (2026-12-05, recall10).
EXP_FOLD = True
_EXP_POWER = re.compile(r"(?<![a-z0-9_.])e\s*(?:\^|\*\*)\s*(?:\(([^()\n]{1,40})\)|\{([^{}\n]{1,40})\})")
# Runs of white space are one space (or one blank line) before the rubric reads the answer: a
# pattern with two `\s*` around an optional word (`mask\s*(里|中)?\s*(为\s*)?true`, welford_merge)
# tries every split of a run between them, and "mask" then 16 000 spaces took 10 s of the
# worker per pattern. The rubric's words are separated by one space or none, so nothing it reads changes.
_SPACE_RUN = re.compile(r"[^\S\n]{2,}")
_LINE_RUN = re.compile(r"\n(?:[^\S\n]*\n)+")


def _operator(text: str, start: int, end: int) -> bool:
    """The `*` run text[start:end] multiplies or raises: operands on both sides, or spaces on both."""
    left, right = text[start - 1:start], text[end:end + 1]
    if bool(_OPERAND_LEFT.match(left)) and bool(_OPERAND_RIGHT.match(right)):
        return True
    return left.isspace() and right.isspace()


def _substitute(pattern: re.Pattern[str], replace: Callable[[re.Match[str]], str], text: str,
                index: list[int]) -> tuple[str, list[int]]:
    """re.sub that carries `index` (where each character of `text` came from) along: a replacement's
    characters come from where the match started."""
    out, where, last = [], [], 0
    for m in pattern.finditer(text):
        said = replace(m)
        out += [text[last:m.start()], said]
        where += index[last:m.start()] + [index[m.start()]] * len(said)
        last = m.end()
    if not out:  # nothing matched (the common case): no copies
        return text, index
    out.append(text[last:])
    return "".join(out), where + index[last:]


def fold_white_space(text: str, index: list[int]) -> tuple[str, list[int]]:
    """Runs of white space as one space (or one blank line), `index` carried along (_substitute): how the
    rubric reads them, and what keeps a pattern's two `\\s*` from trying every split of a long run."""
    text, index = _substitute(_LINE_RUN, lambda m: "\n\n", text, index)
    return _substitute(_SPACE_RUN, lambda m: " ", text, index)


def _fold_markup(text: str) -> tuple[str, list[int]]:
    """`text` without its markup, and where each character of it is in `text`."""
    text, index = fold_white_space(text, list(range(len(text))))
    if not MARKUP_FOLD:
        return text, index
    text, index = _substitute(_LIST_MARKER, lambda m: m.group()[:-1] + " ", text, index)
    emphasis = {m.start() for m in _EMPHASIS.finditer(text) if not _operator(text, m.start(), m.end())}
    text, index = _substitute(_EMPHASIS, lambda m: "" if m.start() in emphasis else m.group(), text, index)
    text, index = _substitute(_BACKTICKS, lambda m: "", text, index)
    text, index = _substitute(_DASH_ARROW, lambda m: "→", text, index)
    text, index = _substitute(_LATEX_SIGN, lambda m: _LATEX_SIGNS[m.group(1)], text, index)
    if LATEX_FOLD:
        text, index = _substitute(_LATEX_NAMED, lambda m: _LATEX_NAMES[m.group(1) or m.group(2)], text, index)
        text, index = _substitute(_LATEX_WORDS, lambda m: m.group(1), text, index)
        text, index = _substitute(_LATEX_BAR, lambda m: "mean", text, index)
    if EXP_FOLD:
        text, index = _substitute(_EXP_POWER, lambda m: f"exp({m.group(1) or m.group(2)})", text, index)
    text, index = _substitute(_LATEX_BRACES, lambda m: m.group(1), text, index)
    if LATEX_FOLD:
        text, index = _substitute(_LATEX_FRAC, _fraction, text, index)
    return text, index


@functools.lru_cache(maxsize=8192)  # a class writes in a few thousand distinct characters
def _fold_char(ch: str, homoglyphs: bool = False) -> str:
    return _fold_signs(ch, homoglyphs)


def fold_char(ch: str, homoglyphs: bool = False) -> str:
    """One character of an answer as the rubric reads it (none, one or a few), signs folded;
    `homoglyphs`: reads_homoglyphs of the whole answer."""
    return _fold_char(ch, True) if homoglyphs else _fold_char(ch)  # the cache's keys as _Text.of makes them


def reads_homoglyphs(text: str) -> bool:
    """Whether the answer's Latin-looking Cyrillic letters are read as Latin ones (see INVISIBLE_FOLD)."""
    return INVISIBLE_FOLD and _homoglyphs(unicodedata.normalize("NFKC", text).lower())
