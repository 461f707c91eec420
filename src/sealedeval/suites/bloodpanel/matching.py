"""Sealed-profile text matching: normalisation, synonyms, and the assertion status of a mention.

The published V11 scorer lower-cases the report and tests ``term in text``. That counts "no
evidence of hepatitis" as a hepatitis diagnosis, "abnormal" as "normal", "muscle" as "SLE", and a
differential "Hypothyroidism: 5%" as a hypothyroidism diagnosis. The ``sealed`` profile replaces
it with the rule below; ``data/bloodpanel/SEALED_RULE.md`` states the same rule for readers.

THE RULE (version 2; ``data/bloodpanel/SEALED_RULE.md`` states it in full, with examples)
----------------------------------------------------------------------------------------
1. Normalise text and terms alike: NFKC, lower case, accents folded, British → American
   spelling, ranges ("1-3%" → "1 to 3%") and written percents ("5 percent" → "5%") unified,
   dashes → " ; ", other hyphens → spaces.
2. A term matches when one of its synonyms (``vocabulary.SYNONYMS``: abbreviations and the
   German, Spanish and French names per condition) occurs between word boundaries.
3. Each mention gets one status, ConText-style (Harkema, Dowling, Thornblade, Chapman 2009,
   J Biomed Inform 42:839-851), from per-language trigger lists (``cues``):

   * a probability stated for the mention in any common form (``_attached_probability``):
     below 10 % → **low probability**; 10 % or more → affirmed unless its own list entry
     negates it;
   * a checklist value after it ("X: absent", "X: present");
   * **negated** — in the scope of a pre-negation, a negating subject, or a post-negation;
     a scope runs to the end of the clause (at most ``PRE_WINDOW`` words) and is terminated by
     ``;``/``:``, contrast cues, a new assertion (for determiner negations) and a comma or
     "and" that opens a clause with its own verb; pseudo-triggers ("cannot be excluded", "not
     inconsistent with") are not cues;
   * **hypothetical** — future, prevention, testing, a test's name;
   * **affirmed** — everything else, hedged suggestions included.

4. A **trap flag fires** only if at least one of its mentions is *affirmed*. An expected
   **keyword or scoring system is hit** if at least one mention is affirmed or hypothetical.

Why a ConText implementation of our own and not medspaCy's: medspaCy (its ``ConTextComponent``
implements the same algorithm) needs spaCy, a pipeline and its tokeniser models, ships English
rules only, and its results depend on the spaCy version's tokenisation; the rule here is ~400
lines of regular expressions over the normalised text, deterministic by construction, sealed
with the rubric (every cue list is a rubric input), fast enough for a 100,000-report run (cue
families are prefiltered by the words a sentence holds), and reads four languages. The
detector is measured, not trusted: ``battery`` runs it on the labelled assertion battery and
every bloodpanel report shows its precision and recall.

Word windows, the 10 % threshold and the cue lists are constants below; they are part of the
sealed rubric, and changing them changes the grader version.
"""

from __future__ import annotations

import bisect
import enum
import functools
import itertools
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, cast

from sealedeval.suites.bloodpanel.cues import COMPARATORS, CUES, PERCENT_WORDS
from sealedeval.suites.bloodpanel.vocabulary import CONDITION_WORDS, SYNONYMS

LOW_PROBABILITY_PERCENT: Final = 10.0
"""A differential given less than this probability is not a diagnosis."""

PRE_WINDOW: Final = 30
"""Words a negation cue reaches forward at most (ConText's scope is the clause; this only caps
a clause that never ends)."""

HYPO_WINDOW: Final = 15
"""Words a hypothetical cue ("risk of", "screening for") reaches forward at most."""

POST_WINDOW: Final = 10
"""Words a post-negation cue reaches backward."""


class Polarity(enum.IntEnum):
    """Assertion status of one mention; a larger value is a weaker assertion."""

    AFFIRMED = 0
    HYPOTHETICAL = 1
    LOW_PROBABILITY = 2
    NEGATED = 3


@dataclass(frozen=True, slots=True)
class Mention:
    """One occurrence of a term, with its status and the sentence it came from."""

    term: str
    polarity: Polarity
    snippet: str
    probability: float | None = None
    source: str = "text"


# --- normalisation -------------------------------------------------------------------------------

_FOLD: Final = {
    "\u2019": "'",
    "\u2018": "'",
    "\u00b4": "'",
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2212": "-",
    "\u03b2": "beta",
    "\u03b1": "alpha",
    "\u03b3": "gamma",
    "\u03bc": "u",
    "\u00b5": "u",
    "\u2265": ">=",
    "\u2264": "<=",
    "\u00a0": " ",
}
"""Non-ASCII characters folded to plain forms (only those present are replaced)."""
_NON_ASCII: Final = re.compile(r"[^\x00-\x7f\u2014\u2013]")

_SPELLING: Final = (
    (
        "ae",
        (
            ("aetiolog", "etiolog"),
            ("anaesth", "anesth"),
            ("aemi", "emi"),
            ("haem", "hem"),
            ("paed", "ped"),
            ("faec", "fec"),
        ),
    ),
    (
        "oe",
        (
            ("oesophag", "esophag"),
            ("coeliac", "celiac"),
            ("rrhoea", "rrhea"),
            ("oedem", "edem"),
            ("oestr", "estr"),
        ),
    ),
    ("leuc", (("leucocyt", "leukocyt"), ("leucopen", "leukopen"))),
    ("our", (("tumour", "tumor"),)),
    ("bre", (("fibre", "fiber"),)),
    ("tre", (("litre", "liter"),)),
)
"""British → American stems (``aemi→emi``: anaemia, thalassaemia, …), grouped under a short
key so that an American text costs six substring scans, not sixteen."""


_ACCENTS: Final = {"\u00df": "ss", "\u0153": "oe", "\u00e6": "ae", "\u0131": "i", "\u00f8": "o"}
"""Letters NFKD does not decompose, folded by hand (ß, œ, æ, dotless i, ø)."""
_SPANISH_YES: Final = re.compile(r"(?<!\w)s\u00ed(?!\w)")
_RANGE_DASH: Final = re.compile(r"(\d)\s*[-\u2013]\s*(?=\d)")
_PERCENT_WORD: Final = re.compile(
    r"(\d)\s*(?:" + "|".join(re.escape(w) for w in PERCENT_WORDS) + r")(?!\w)"
)


def _fold(char: str) -> str | None:
    """Plain form of a non-ASCII character: ``_FOLD``, ``_ACCENTS``, else its NFKD letters
    without combining marks ("ä" → "a", "é" → "e", "ñ" → "n"); None when it has none."""
    plain = _FOLD.get(char) or _ACCENTS.get(char)
    if plain is not None:
        return plain
    base = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    return base if base and base.isascii() and base != char else None


def normalize(text: str) -> str:
    """Normalised form used on both sides of every sealed match (see rule 1).

    Plain string operations, no regular expressions on the common path: this runs on every
    graded report. Dashes (em, en, and a spaced hyphen " - ") become " ; " so they still end a
    clause, and are replaced first so that the text becomes ASCII, on which every later scan is
    faster; every other hyphen becomes a space ("anti-dsDNA" → "anti dsdna", "CKD-EPI" →
    "ckd epi").
    """
    t = text
    if not t.isascii():
        t = unicodedata.normalize("NFKC", t)
        if "\u2013" in t:
            t = _RANGE_DASH.sub(r"\1 to ", t)
        if "\u2014" in t or "\u2013" in t:
            t = t.replace("\u2014", " ; ").replace("\u2013", " ; ")
        t = t.lower()
        if "s\u00ed" in t:
            t = _SPANISH_YES.sub("yes", t)  # before accents go: "sí" (yes) is not "si" (if)
        if not t.isascii():
            for char in set(_NON_ASCII.findall(t)):
                plain = _fold(char)
                if plain is not None:
                    t = t.replace(char, plain)
    else:
        t = t.lower()
    for ws in ("\t", "\r", "\x0b", "\x0c"):
        if ws in t:
            t = t.replace(ws, " ")
    if "`" in t:
        t = t.replace("`", "'")
    for key, pairs in _SPELLING:
        if key in t:
            for british, american in pairs:
                if british in t:
                    t = t.replace(british, american)
    if "-" in t:
        t = _RANGE_DASH.sub(r"\1 to ", t)  # "1-3%" is a range, not two numbers
        t = t.replace(" - ", " ; ").replace("-", " ")
    if "cent" in t or "cient" in t or "pct" in t or "prozent" in t:
        t = _PERCENT_WORD.sub(r"\1%", t)
    while "  " in t:
        t = t.replace("  ", " ")
    return t


# --- terms ---------------------------------------------------------------------------------------

_META: Final = frozenset("()[]{}?*+|\\.^$")


def _anchor(fragment: str) -> str:
    """Literal a synonym starts with: up to the first operator, minus an optional last
    character (``"anemias?"`` → ``"anemia"``, ``"25 ?(oh)"`` → ``"25"``)."""
    i = 0
    while i < len(fragment) and fragment[i] not in _META:
        i += 1
    prefix = fragment[:i]
    if i < len(fragment) and fragment[i] in "?*{":
        prefix = prefix[:-1]
    return prefix


@dataclass(frozen=True, slots=True)
class TermMatcher:
    """Finds a term's synonyms between word boundaries.

    Candidates come from ``str.find`` on each synonym's leading literal; the compiled
    alternation then runs only at those positions. The result equals a word-bounded
    ``finditer`` (non-overlapping, leftmost, first alternative that matches) without pushing
    every position of a 4 kB report through the regex engine (a leading look-behind disables
    the engine's own literal prefilter and costs ~30x).
    """

    term: str
    anchors: tuple[str, ...]
    pattern: re.Pattern[str]

    def iter_spans(self, text: str) -> Iterator[tuple[int, int]]:
        """Non-overlapping ``(start, end)`` of the matches in ``text``, in order (lazily: a
        caller that stops at the first useful match does not pay for the rest)."""
        cands: set[int] = set()
        for a in self.anchors:
            i = text.find(a)
            while i != -1:
                cands.add(i)
                i = text.find(a, i + 1)
        last_end = -1
        for pos in sorted(cands):
            if pos < last_end or (pos and (text[pos - 1].isalnum() or text[pos - 1] == "_")):
                continue
            m = self.pattern.match(text, pos)
            if m is not None:
                last_end = m.end()
                yield m.span()

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Non-overlapping ``(start, end)`` of every match in ``text``."""
        return list(self.iter_spans(text))


@functools.lru_cache(maxsize=4096)
def term_matcher(term: str) -> TermMatcher:
    """Matcher of ``term`` and its synonyms (cached: compiled once per process).

    Raises:
        ValueError: A synonym does not start with a literal of at least two characters.
    """
    key = normalize(term).strip()
    fragments = SYNONYMS.get(key) or (re.escape(key) + "(?:e?s)?",)
    anchors = tuple(dict.fromkeys(_anchor(f) for f in fragments))
    if any(len(a) < 2 for a in anchors):
        raise ValueError(f"every synonym of {term!r} must start with 2+ literal characters")
    return TermMatcher(key, anchors, re.compile("(?:" + "|".join(fragments) + r")(?!\w)"))


def term_pattern(term: str) -> re.Pattern[str]:
    """Word-bounded ``re`` pattern of ``term`` and its synonyms (same matches, slower)."""
    return re.compile(r"(?<!\w)" + term_matcher(term).pattern.pattern)


# --- cues ----------------------------------------------------------------------------------------

_WORD: Final = re.compile(r"\w+")


def _phrase_regex(phrases: Iterable[str]) -> str:
    """Alternation of cue phrases (``matching.normalize`` form; ``*`` = any word ending),
    longest first so that "no evidence of" wins over "no"; ends on a word boundary."""
    alts = []
    for ph in sorted(set(phrases), key=lambda x: (-len(x), x)):
        words = [
            re.escape(w[:-1]) + r"\w*" if w.endswith("*") else re.escape(w) for w in ph.split()
        ]
        alts.append(r"\s+".join(words))
    return "(?:" + "|".join(alts) + r")(?!\w)"


def _family(name: str) -> list[str]:
    return [ph for lang in CUES.values() for ph in lang[name]]


def _first_words(phrases: Iterable[str]) -> tuple[frozenset[str], tuple[str, ...]]:
    """Words a family's phrases start with (exact words, and prefixes of ``*`` words): a
    sentence holding none of them skips that family's regular expression."""
    exact: set[str] = set()
    prefixes: set[str] = set()
    for ph in phrases:
        w = ph.split()[0]
        if w.endswith("*"):
            prefixes.add(w[:-1])
        else:
            exact.add(w)
    return frozenset(exact), tuple(sorted(prefixes))


_NEG_PHRASES: Final = _family("pre_neg") + _family("pronoun_neg")
_DIFFERENTIATE: Final = r"(?:differentiat|distinguish)\w*\b[^.;:]{0,60}?\bfrom(?!\w)"
""""differentiates A from X", "distinguishes A from X": X is what is set aside."""
_PRE_NEG: Final = re.compile("(?:" + _DIFFERENTIATE + "|" + _phrase_regex(_NEG_PHRASES) + ")")
_PRONOUN_NEG: Final = frozenset(_family("pronoun_neg"))
_POST_NEG: Final = re.compile(_phrase_regex(_family("post_neg")))
_PSEUDO: Final = re.compile(_phrase_regex(_family("pseudo")))
_RISK_OF: Final = r"risks?\s+(?:[\w']+\s+){1,2}?(?:of|for)(?!\w)"
""""risk stratum for X", "low risk status for X": a risk statement with words in between."""
_HYPO_PRE: Final = re.compile("(?:" + _RISK_OF + "|" + _phrase_regex(_family("hypo_pre")) + ")")
_HYPO_POST: Final = re.compile(
    r"(?:\s+(?!and\b|or\b|und\b|y\b|et\b)[\w']+){0,2}?\s+" + _phrase_regex(_family("hypo_post"))
)
_CONTRAST: Final = re.compile(_phrase_regex(_family("contrast")))
_VERB_TERM: Final = re.compile(_phrase_regex(_family("verb_term")))
_CLAUSE_VERB: Final = re.compile(_phrase_regex(_family("clause_verb")))
_RELATIVE: Final = frozenset(_family("relative"))
_HARD_BREAK: Final = re.compile(r"[;:]")
_SOFT_BREAK: Final = re.compile(r",|\s(?:and|und|y|et|e)\s")
_ANTI: Final = re.compile(r"(?:^|\W)anti\s*$")

_FIRST: Final = {
    "neg": _first_words([*_NEG_PHRASES, "differentiat*", "distinguish*"]),
    "post": _first_words(_family("post_neg")),
    "pseudo": _first_words(_family("pseudo")),
    "hypo_pre": _first_words(_family("hypo_pre")),
    "hypo_post": _first_words(_family("hypo_post")),
}
_PUNCT: Final = "!\"#$%&'()*+,./:;<=>?@[\\]^_`{|}~\u2014\u2013\u2026"

# --- probabilities -------------------------------------------------------------------------------

_NUM: Final = r"\d{1,3}(?:[.,]\d+)?"
_CMP: Final = "|".join(
    re.escape(k).replace(r"\ ", r"\s+") for k in sorted(COMPARATORS, key=lambda x: (-len(x), x))
)
_NOT_A_PROBABILITY: Final = (
    r"(?!\s*(?:hba1c|a1c|hb a1c|saturation|tsat|hematocrit|hct|rdw|hba2|hbf|of (?:the )?"
    r"(?:cells|total|normal|reference))\b)"
)
_PCT: Final = (
    rf"(?:(?P<cmp>{_CMP}|~|approximately|approx|about|around|circa|ca|etwa|aprox|environ)\s*)?"
    rf"(?P<a>{_NUM})\s*%?\s*(?:(?:to|bis|a|y|et|and|or)\s*(?P<b>{_NUM})\s*)?%" + _NOT_A_PROBABILITY
)
_PROB_ADJ: Final = _phrase_regex(_family("prob_low") + _family("prob_high"))
_PROB_NOUN: Final = _phrase_regex(_family("prob_noun"))
_WORD_PROB: Final = (
    rf"(?P<w>{_PROB_ADJ})\s+{_PROB_NOUN}"
    rf"|{_PROB_NOUN}\s+(?:is\s+|ist\s+|es\s+|est\s+)?(?P<w2>{_PROB_ADJ})"
)
_FILLER: Final = (
    r"(?:is|are|of|at|estimated|estimate|probability|likelihood|chance|has|have|a|an|carries|"
    r"carry|with an?|given|p|est|ist|es|de|d|du|der|von|wahrscheinlichkeit|probabilidad|"
    r"probabilite|[=(~])"
)
_RIGHT_PROB: Final = re.compile(
    # (a) the probability follows the mention, with only filler words between: "Hepatitis 3%",
    # "hepatitis (probability 40%)", "the likelihood of CKD is under 5%", "X carries a low
    # probability"; (b) a label of up to four more words, an optional parenthesis and a
    # separator first: "anaemia of inflammation: 5-15%", "viral hepatitis (HBV): 70%",
    # "Probability of cirrhosis: remote (<1%)" (a bare probability word counts after a separator).
    rf"(?:(?P<sep>(?:\s+[\w']+){{0,4}}?\s*\)?\s*(?:\([^()%:]{{0,40}}\)\s*)?[:=(;])\s*"
    rf"(?:{_FILLER}\s*)*|\s*(?:;\s*)?(?:{_FILLER}\s*)*)"
    rf"(?:{_PCT}|{_WORD_PROB}|(?(sep)(?P<w3>{_PROB_ADJ})(?![\w ]*%)|(?!)))"
)
_LEFT_PROB: Final = re.compile(
    rf"(?:{_PCT}|(?P<w>{_PROB_ADJ}))\s*(?:estimated\s+)?(?:{_PROB_NOUN}|risk)\s+"
    r"(?:of|for|de|d'|fur|that)\s*(?:(?:an?|the|une?|una?|el|la|le|les|l'|eine[rs]?|ein)\s+)?"
    r"(?:[\w']+\s+){0,2}$"
)
_CHECKLIST: Final = re.compile(
    r"(?:\s+[\w']+){0,3}?\s*(?:\([^()]{0,60}\)\s*)?[:;=]\s*(?:(?P<neg>"
    + _phrase_regex(_family("check_neg"))[3:-7]
    + r")|(?P<pos>"
    + _phrase_regex(_family("check_pos"))[3:-7]
    + r"))\s*(?=$|[.,;(|\u2026]|\s\(|\s;)"
)
_LOW_WORDS: Final = frozenset(_family("prob_low"))

WORD_PROBABILITY_LOW: Final = 5.0
WORD_PROBABILITY_HIGH: Final = 50.0
"""Nominal percentages of probability words ("low" is below ``LOW_PROBABILITY_PERCENT``,
"moderate"/"high" above it); only the side of the threshold matters, they never enter a sum."""


def _compare(cmp: str | None, value: float) -> float:
    """A bound read as the probability it implies: "<5%" lies below 5, "≤5%" at most 5."""
    op = COMPARATORS.get(" ".join((cmp or "").split()), "")
    return math.nextafter(value, -math.inf) if op == "<" else value


def _probability(m: re.Match[str]) -> float:
    """The probability a ``_PCT`` / word match states (a range: its upper end)."""
    groups = m.groupdict()
    word = groups.get("w") or groups.get("w2") or groups.get("w3")
    if word is not None:
        return (
            WORD_PROBABILITY_LOW if " ".join(word.split()) in _LOW_WORDS else WORD_PROBABILITY_HIGH
        )
    hi = groups.get("b") or groups["a"]
    return _compare(groups.get("cmp"), parse_percent(hi))


def parse_percent(text: str) -> float:
    """``"12,5"`` or ``"12.5"`` → 12.5 (decimal commas occur in localised reports)."""
    return float(text.replace(",", "."))


_VALUE: Final = re.compile(rf"\s*(?:{_PCT}|(?P<w>{_PROB_ADJ}))\s*$")
_BARE_NUMBER: Final = re.compile(rf"\s*(?P<cmp>{_CMP}|~)?\s*(?P<a>{_NUM})\s*$")


def parse_probability(value: object) -> tuple[float, bool] | None:
    """A structured differential's probability: ``(percent or fraction, numeric?)``.

    Numbers are returned as given (the caller decides whether they are fractions); strings may
    be "60%", "<5 %", "1-3%" (upper end), "12,5", or a probability word in any of the four
    languages ("high", "baja", "élevée" → a nominal value, ``numeric`` False). None otherwise.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return (float(value), True) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    t = normalize(value).strip()
    m = _VALUE.match(t)
    if m is not None:
        return _probability(m), m.group("w") is None
    m = _BARE_NUMBER.match(t)
    if m is not None:
        return _compare(m.group("cmp"), parse_percent(m.group("a"))), True
    return None


# --- differential lines (for the probability sum) ------------------------------------------------

_CONDITION: Final = re.compile(r"(?<!\w)(?:" + "|".join(CONDITION_WORDS) + r")(?!\w)")


def names_condition(label: str) -> bool:
    """Whether a differential label names a condition (``vocabulary.CONDITION_WORDS``), so
    that "Hematology — primary signal: 76%" does not make a differential valid."""
    return _CONDITION.search(normalize(label)) is not None


_NUMBER: Final = re.compile(r"\d{1,3}(?:[.,]\d+)?")
_PROB_PREFIX: Final = re.compile(
    r"(?:probability|likelihood|estimated|approximately|approx\.?|about|~|p\s*=)\s*(?:of\s*)?$"
)
_BULLET: Final = re.compile(r"^\s*(?:[*\u2022]\s*|\d{1,2}[.)]\s+)")
_ENTRY_SEPARATORS: Final = (":", "(", ";", "=")
_ENTRY_PIECE: Final = re.compile(
    rf"^\s*(?P<label>[^%:|]{{2,160}}?)\s*(?:[:=(]\s*|;\s*|\s)(?:(?:probability|likelihood|"
    rf"estimated|approximately|approx|about|p\s*=)\s*)?(?:{_PCT})\s*\)?\s*$"
)


def _entry(line: str) -> tuple[int, int, float] | None:
    """``(label start, label end, probability)`` of a differential line, else None."""
    pct = line.find("%")
    if pct < 0:
        return None
    j = pct
    while j > 0 and line[j - 1] == " ":
        j -= 1
    k = j
    while k > 0 and (line[k - 1].isdigit() or line[k - 1] in ".,"):
        k -= 1
    number = line[k:j]
    if not _NUMBER.fullmatch(number) or (k and (line[k - 1].isalnum() or line[k - 1] == "_")):
        return None
    head = line[:k].rstrip()
    m = _PROB_PREFIX.search(head) if head[-1:].isalpha() or head.endswith((".", "~", "=")) else None
    if m is not None:
        head = head[: m.start()].rstrip()
    if not head.endswith(_ENTRY_SEPARATORS):
        return None
    end = len(head) - 1
    b = _BULLET.match(line)
    start = b.end() if b else 0
    while start < end and line[start] == " ":
        start += 1
    while end > start and line[end - 1] == " ":
        end -= 1
    label = line[start:end]
    if not 2 <= len(label) <= 160 or ":" in label or "%" in label:
        return None
    return start, end, parse_percent(number)


def parse_entry(item: str) -> tuple[str, float] | None:
    """``(label, probability)`` when a (normalised) item is a differential line, else None.

    A differential line starts with a condition and gives its probability right after it:
    ``"Beta thalassemia minor: 98% — …"``, ``"Hepatitis (probability 40%)"``, ``"Label =
    12%"``. The first percentage of the line must follow the label and a separator (``:``,
    ``(``, a dash, ``=``), optionally with "probability"/"likelihood"/"about" in between. A
    percentage inside prose (``"The 55% probability for lupus nephritis …"``) is not an entry.
    """
    e = _entry(item)
    return None if e is None else (item[e[0] : e[1]], e[2])


def parse_entries(item: str) -> list[tuple[str, float]]:
    """Every ``(label, probability)`` of a (normalised) differential item.

    ``parse_entry``'s line when it is one; else a line of several entries separated by commas,
    semicolons or bars, each a label and its probability ("Gilbert syndrome 92%, haemolytic
    anaemia 3%, hepatitis 2%", "Healthy 95% | hypothyroidism 3% | anaemia 2%"), after an
    optional heading ("Differential: …"). Every piece must be an entry, or the line is prose
    and gives none. A range counts at its midpoint and a bound at its value in the sum.
    """
    one = parse_entry(item)
    if one is not None:
        return [one]
    if item.count("%") < 2:
        return []
    body = _BULLET.sub("", item, count=1)
    head, colon, rest = body.partition(":")
    if colon and "%" not in head and len(head.split()) <= 3:
        body = rest
    out: list[tuple[str, float]] = []
    for piece in re.split(r"[,;|]\s*(?![\d])", body.rstrip(" .")):
        m = _ENTRY_PIECE.match(piece)
        if m is None:
            return []
        a = parse_percent(m.group("a"))
        b = m.group("b")
        out.append((m.group("label").strip(" (-"), (a + parse_percent(b)) / 2 if b else a))
    return out


# --- the status of one mention -------------------------------------------------------------------


def _cues(pattern: re.Pattern[str], text: str) -> Iterator[tuple[int, int]]:
    """Matches of a cue pattern that start on a word boundary.

    The cue patterns have no leading ``\\b`` (it would stop the regex engine from skipping
    ahead on the first character, which costs ~10x); the boundary is checked here instead.
    """
    for m in pattern.finditer(text):
        s = m.start()
        if s and (text[s - 1].isalnum() or text[s - 1] == "_") and text[s].isalnum():
            continue
        yield m.span()


def _spans(
    pattern: re.Pattern[str], text: str, masked: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    out = []
    for s, e in _cues(pattern, text):
        if not any(s < me and ms < e for ms, me in masked):
            out.append((s, e))
    return out


def _has(words: set[str], family: str) -> bool:
    exact, prefixes = _FIRST[family]
    return not words.isdisjoint(exact) or (
        bool(prefixes) and any(w.startswith(prefixes) for w in words)
    )


class _Sentence:
    """Cue positions of one sentence, computed only for the cue families its words trigger."""

    __slots__ = ("_breaks", "hypo_post", "hypo_pre", "neg", "post_neg", "pseudo", "start", "text")

    def __init__(self, start: int, text: str) -> None:
        self.start = start
        self.text = text
        words = set(map(str.strip, text.split(), itertools.repeat(_PUNCT)))
        words.discard("")
        neg, post = _has(words, "neg"), _has(words, "post")
        self.pseudo = list(_cues(_PSEUDO, text)) if (neg or post) and _has(words, "pseudo") else []
        self.neg = _spans(_PRE_NEG, text, self.pseudo) if neg else []
        self.post_neg = _spans(_POST_NEG, text, self.pseudo) if post else []
        self.hypo_pre = list(_cues(_HYPO_PRE, text)) if _has(words, "hypo_pre") else []
        self.hypo_post = _has(words, "hypo_post")
        self._breaks: tuple[list[int], list[int], list[tuple[int, int]], list[int]] | None = None

    @property
    def breaks(self) -> tuple[list[int], list[int], list[tuple[int, int]], list[int]]:
        """(hard breaks and contrast cues, soft breaks, verb terminators, clause verbs): starts
        (verb terminators with their ends), computed on first use; cue spans are masked so a
        terminator inside a cue ("does not *suggest*", "not *due to*") ends nothing."""
        if self._breaks is None:
            t = self.text
            masked = [*self.neg, *self.pseudo, *self.post_neg, *self.hypo_pre]
            hard = sorted(
                [m.start() for m in _HARD_BREAK.finditer(t)]
                + [s for s, _ in _spans(_CONTRAST, t, masked)]
            )
            soft = [m.start() for m in _SOFT_BREAK.finditer(t)]
            verbs = [(s, e) for s, e in _spans(_VERB_TERM, t, masked) if not self._relative(s)]
            clause = [s for s, _ in _spans(_CLAUSE_VERB, t, masked) if not self._relative(s)]
            self._breaks = (hard, soft, verbs, clause)
        return self._breaks

    def _relative(self, pos: int) -> bool:
        """A verb within two words after "that/which/to/…" belongs to a relative or infinitive
        clause of the phrase before it and starts no new assertion."""
        before = self.text[max(0, pos - 40) : pos].split()[-2:]
        return any(w.strip(_PUNCT) in _RELATIVE for w in before)


def _words(text: str) -> int:
    return len(_WORD.findall(text))


def _between(xs: Sequence[int], a: int, b: int) -> bool:
    i = bisect.bisect_left(xs, a)
    return i < len(xs) and xs[i] < b


def _in_scope(sent: _Sentence, cue: tuple[int, int], s: int, *, window: int) -> bool:
    """Whether a forward cue at ``cue`` reaches a mention starting at ``s`` (ConText scope).

    The scope ends at ``;``/``:``, at a contrast cue (but, however, aber, pero, mais …), at a
    verb or link that makes a new assertion (suggests, consistent with, points to …) unless the
    cue is a negating subject ("nothing … would suggest X"), and at a comma or "and" followed
    by a clause of its own (a finite verb before the mention); a list continues it.
    """
    cs, ce = cue
    if _words(sent.text[ce:s]) > window:
        return False
    hard, soft, verbs, clause = sent.breaks
    if _between(hard, ce, s):
        return False
    pronoun = " ".join(sent.text[cs:ce].split()) in _PRONOUN_NEG
    if not pronoun and any(ce <= vs < s for vs, _ in verbs):
        return False
    i = bisect.bisect_left(soft, ce)
    if i < len(soft) and soft[i] < s:
        b = soft[i]
        if _between(clause, b, s) or any(b <= vs < s for vs, _ in verbs):
            return False
    return True


def _post_scope(sent: _Sentence, e: int, cs: int) -> bool:
    """Whether a backward cue at ``cs`` reaches a mention ending at ``e``: same clause, within
    ``POST_WINDOW`` words; a list before the cue is covered ("anaemia, cirrhosis and hepatitis
    are excluded"), a mention with its own verb before a comma/"and" is not ("diabetes is
    present and hepatitis is excluded")."""
    if _words(sent.text[e:cs]) > POST_WINDOW:
        return False
    hard, soft, verbs, clause = sent.breaks
    if _between(hard, e, cs) or any(e <= vs < cs for vs, _ in verbs):
        return False
    i = bisect.bisect_left(soft, e)
    return not (i < len(soft) and soft[i] < cs and _between(clause, e, soft[i]))


def _attached_probability(text: str, s: int, e: int) -> float | None:
    """The probability stated for the mention at ``[s, e)``, if the text gives one."""
    if "%" not in text and not _LOW_OR_HIGH.search(text):
        return None
    m = _RIGHT_PROB.match(text, e)
    if m is not None:
        return _probability(m)
    m = _LEFT_PROB.search(text, max(0, s - 120), s)
    if m is not None and m.end() == s:
        return _probability(m)
    # "The probability of diabetes in 10 years is less than 2%": the first percentage after
    # the mention in its clause, when the clause asks for the mention's probability.
    m = _PROB_OF.search(text, max(0, s - 80), s)
    if m is not None and m.end() == s:
        stop = min(
            (i for i in (text.find(";", e), text.find(":", e)) if i != -1), default=len(text)
        )
        m = _PCT_ONLY.search(text, e, stop)
        if m is not None:
            return _probability(m)
    return None


_PROB_OF: Final = re.compile(
    _PROB_NOUN
    + r"\s+(?:of|for|de|d'|fur|that)\s*(?:(?:an?|the|une?|una?|el|la|le|les|l'|eine[rs]?|ein)\s+)?"
    r"(?:[\w']+\s+){0,2}$"
)
_PCT_ONLY: Final = re.compile(_PCT)


_LOW_OR_HIGH: Final = re.compile(_PROB_ADJ)


def _cue_polarity(sent: _Sentence, s: int, e: int, lo: int = 0) -> Polarity:
    """Negated / hypothetical / affirmed from the cues of the sentence (cues before ``lo``
    are not considered)."""
    text = sent.text
    for cue in sent.neg:
        if lo <= cue[0] and cue[1] <= s and _in_scope(sent, cue, s, window=PRE_WINDOW):
            return Polarity.NEGATED
    for cs, _ce in sent.post_neg:
        if cs >= e and _post_scope(sent, e, cs):
            return Polarity.NEGATED
    for cue in sent.hypo_pre:
        if lo <= cue[0] and cue[1] <= s and _in_scope(sent, cue, s, window=HYPO_WINDOW):
            return Polarity.HYPOTHETICAL
    if _ANTI.search(text, max(lo, s - 8), s):
        return Polarity.HYPOTHETICAL
    if sent.hypo_post and _HYPO_POST.match(text, e):
        return Polarity.HYPOTHETICAL
    return Polarity.AFFIRMED


def _segment_start(text: str, s: int) -> int:
    """Start of the list entry holding ``s`` (after the last ``,``/``;``/``|`` before it)."""
    return max(text.rfind(c, 0, s) for c in ",;|") + 1


def _text_polarity(sent: _Sentence, s: int, e: int) -> tuple[Polarity, float | None]:
    """Status of a mention at ``[s, e)`` (sentence-relative); see the module docstring."""
    text = sent.text
    p = _attached_probability(text, s, e)
    if p is not None:
        if p < LOW_PROBABILITY_PERCENT:
            return Polarity.LOW_PROBABILITY, p
        # The engine commits to the condition; only its own list entry can take that back
        # ("No hepatitis: 90%", "Diabetes risk: 15%").
        return _cue_polarity(sent, s, e, _segment_start(text, s)), p
    c = _CHECKLIST.match(text, e)
    if c is not None:
        return (Polarity.NEGATED if c.group("neg") else Polarity.AFFIRMED), None
    return _cue_polarity(sent, s, e), None


def _label_polarity(label: str, s: int, e: int, p: float) -> Polarity:
    """Status of a mention inside a structured differential label with probability ``p``."""
    if p < LOW_PROBABILITY_PERCENT:
        return Polarity.LOW_PROBABILITY
    sent = _Sentence(0, label)
    pol = _cue_polarity(sent, s, e)
    return pol


class Document:
    """A report's text prepared for many term look-ups.

    Build once per graded response: the text is normalised once; the sentence and the line
    around a mention are located (and their cues analysed) only when a term is found there.

    Args:
        items: The report's text units (sentences are split inside them; each line is a
            candidate differential line).
        differential: Structured ``(condition, probability in %)`` pairs, if the response had them.
    """

    __slots__ = ("_differential", "_lines", "_sentences", "_text")

    def __init__(
        self, items: Iterable[str], differential: Sequence[tuple[str, float]] = ()
    ) -> None:
        # normalize() maps "\n" to itself and never rewrites across it (every replacement is
        # a run of letters, spaces or one character; NFKC and lower() treat "\n" as a hard
        # boundary), so normalising item by item equals normalising the joined text, and the
        # per-item results can be memoised: a templated report repeats most of its sentences.
        self._lines = list(map(_normalize_item, items))
        self._text: str | None = None
        # Sentences and differential lines are located lazily, around the mentions found.
        self._sentences: dict[int, _Sentence] = {}
        self._differential = [
            (_normalize_item(c.replace("\n", " ")), float(p)) for c, p in differential
        ]

    @property
    def text(self) -> str:
        """The normalised text: the items, one per line."""
        if self._text is None:
            self._text = "\n".join(self._lines)
        return self._text

    def _line(self, pos: int) -> tuple[int, int]:
        text = self.text
        lo = text.rfind("\n", 0, pos) + 1
        hi = text.find("\n", pos)
        return lo, (len(text) if hi == -1 else hi)

    def _sentence(self, pos: int) -> _Sentence:
        """The sentence around ``pos``: within its line, after the last ``. ``/``? ``/``! ``."""
        text = self.text
        lo, hi = self._line(pos)
        start, end = lo, hi
        for sep in (". ", "? ", "! "):
            i = text.rfind(sep, lo, pos)
            if i != -1 and i + 2 > start:
                start = i + 2
            j = text.find(sep, pos, hi)
            if j != -1 and j + 1 < end:
                end = j + 1
        while start < pos and text[start] == " ":
            start += 1
        sent = self._sentences.get(start)
        if sent is None:
            sent = _Sentence(start, text[start:end])
            self._sentences[start] = sent
        return sent

    def _iter_mentions(self, term: str, snippets: bool) -> Iterator[Mention]:
        matcher = term_matcher(term)
        for s, e in matcher.iter_spans(self.text):
            sent = self._sentence(s)
            snippet = ""
            if snippets:
                rel = s - sent.start
                lo, hi = max(0, rel - 90), min(len(sent.text), rel + (e - s) + 90)
                snippet = (
                    ("…" if lo else "")
                    + sent.text[lo:hi].strip()
                    + ("…" if hi < len(sent.text.rstrip()) else "")
                )
            pol, prob = _text_polarity(sent, s - sent.start, e - sent.start)
            yield Mention(term, pol, snippet, prob, "text")
        for cond, p in self._differential:
            for cs, ce in matcher.spans(cond):
                pol = _label_polarity(cond, cs, ce, p)
                yield Mention(term, pol, f"{cond}: {p:g}%", p, "differential")

    def mentions(self, term: str) -> list[Mention]:
        """Every mention of ``term`` (text first, then the structured differential)."""
        return list(self._iter_mentions(term, True))

    def status(self, term: str) -> Polarity | None:
        """Strongest assertion among the mentions of ``term``; None when it is not mentioned."""
        return self.statuses((term,))[0]

    def statuses(self, terms: Sequence[str]) -> list[Polarity | None]:
        """``status`` of each of ``terms`` (the minimum polarity over its ``mentions``).

        Computed line by line: a mention's status depends only on the line it sits in
        (sentences, clauses and differential lines never cross a line break, and no synonym
        can match one), so the strongest status of a term within a line is memoised by
        (term, line text) across documents — reports repeat many of their lines — and a line
        not seen before is analysed here, sharing this document's sentence analyses between
        terms. A term stops at its first affirmed line.
        """
        out: list[Polarity | None] = []
        text = self.text
        memo = _LINE_STATUS
        for term in terms:
            matcher = term_matcher(term)
            best: Polarity | None = None
            line_end = -1
            key: tuple[str, str] | None = None  # the line being analysed (not memoised yet)
            line_best: Polarity | None = None
            for s, e in matcher.iter_spans(text):
                if s >= line_end:  # first mention on a new line
                    if key is not None:
                        _remember(key, line_best)
                        if line_best is not None and (best is None or line_best < best):
                            best = line_best
                        key = None
                        if best is Polarity.AFFIRMED:
                            break
                    lo = text.rfind("\n", 0, s) + 1
                    line_end = text.find("\n", s)
                    if line_end == -1:
                        line_end = len(text)
                    k = (term, text[lo:line_end])
                    seen = memo.get(k, _UNSEEN)
                    if seen is _UNSEEN:
                        key, line_best = k, None
                    else:
                        known = cast("Polarity | None", seen)
                        if known is not None and (best is None or known < best):
                            best = known
                            if best is Polarity.AFFIRMED:
                                break
                        continue
                elif key is None or line_best is Polarity.AFFIRMED:
                    continue  # a memoised line, or this line's status is already the strongest
                pol = self._polarity_at(s, e)
                if line_best is None or pol < line_best:
                    line_best = pol
                    if pol is Polarity.AFFIRMED:  # nothing in the line can be stronger
                        _remember(key, pol)
                        best, key = pol, None
                        break
            if key is not None:
                _remember(key, line_best)
                if line_best is not None and (best is None or line_best < best):
                    best = line_best
            if best is not Polarity.AFFIRMED:
                for cond, p in self._differential:
                    for cs, ce in matcher.spans(cond):
                        pol = _label_polarity(cond, cs, ce, p)
                        if best is None or pol < best:
                            best = pol
            out.append(best)
        return out

    def _polarity_at(self, s: int, e: int) -> Polarity:
        """Status of the text mention at ``[s, e)`` (as ``_iter_mentions`` gives it)."""
        sent = self._sentence(s)
        return _text_polarity(sent, s - sent.start, e - sent.start)[0]

    def fires(self, flag: str) -> bool:
        """Whether a trap flag is asserted (rule 4)."""
        return self.status(flag) is Polarity.AFFIRMED

    def hits(self, term: str) -> bool:
        """Whether an expected keyword or scoring system is engaged with (rule 4)."""
        st = self.status(term)
        return st is not None and st <= Polarity.HYPOTHETICAL


_ITEM_CACHE_SIZE: Final = 1 << 15
_LINE_CACHE_SIZE: Final = 1 << 16
"""Memo sizes (entries): bounded so a 100,000-report run keeps a flat memory profile."""

_normalize_item: Final = functools.lru_cache(maxsize=_ITEM_CACHE_SIZE)(normalize)
"""``normalize`` memoised, for the items of a report (see ``Document.__init__``)."""


_UNSEEN: Final[object] = object()
_LINE_STATUS: dict[tuple[str, str], Polarity | None] = {}
"""(term, normalised line) → strongest status of the term's mentions in that line."""


def _remember(key: tuple[str, str], status: Polarity | None) -> None:
    if len(_LINE_STATUS) >= _LINE_CACHE_SIZE:
        _LINE_STATUS.clear()  # bounded memory; refills from the next reports
    _LINE_STATUS[key] = status


def polarities(text: str, term: str) -> list[Polarity]:
    """Statuses of every mention of ``term`` in ``text`` (one item; handy in tests and docs)."""
    return [m.polarity for m in Document([text]).mentions(term)]
