"""Sealed-profile text matching: normalisation, synonyms, and the assertion status of a mention.

The published V11 scorer lower-cases the report and tests ``term in text``. That counts "no
evidence of hepatitis" as a hepatitis diagnosis, "abnormal" as "normal", "muscle" as "SLE", and a
differential "Hypothyroidism: 5%" as a hypothyroidism diagnosis. The ``sealed`` profile replaces
it with the rule below; ``data/bloodpanel/SEALED_RULE.md`` states the same rule for readers.

THE RULE
--------
1. Normalise text and terms alike: Unicode NFKC, lower case, British → American spelling
   (``aemi→emi``: anaemia, thalassaemia, dyslipidaemia; ``haem→hem``: haemolytic, haemoglobin;
   oedema, oesophagus, paediatric, …), dashes → " ; " (still clause breaks), other hyphens →
   spaces, "β" → "beta".
2. A term matches when one of its synonyms (``vocabulary.SYNONYMS``) occurs between word
   boundaries (so "abnormal" is not "normal", "muscle" is not "sle", "CKD-EPI" is not "CKD").
3. Each match (a *mention*) gets one status, checked in this order:

   * **low probability** — the mention is the label of a differential entry whose stated
     probability is below 10 %: a line ``Label: N%`` / ``Label (N%)`` / ``Label (probability
     N%)``, an item of the structured ``differential`` with ``probability < 10``, or a clause
     that names a probability ("probability", "likelihood", "chance", "estimated", …) and whose
     percentage nearest the mention is below 10 ("the probability of X is less than 2%");
   * **negated** — a negation cue precedes the mention in the same clause within 15 words
     (no, not, without, never, neither/nor, absence of, absent, free of, negative for, lack of,
     excludes/excluded/excluding, rules/ruled/ruling out, unlikely, inconsistent with, not
     consistent with, rather than, unlike, as opposed to, against, differentiates/distinguishes …
     from), or a post-negation cue follows it within 10 words (is unlikely, excluded, ruled out,
     absent, negative, not present/seen/supported/evident/detected/likely/confirmed); a clause
     ends at ; : — and at but, however, although, though, whereas, while, which, who, except,
     nevertheless, consistent with, suggesting/indicating/confirming, due to, secondary to,
     because; commas do not end a clause (so "ruling out hepatitis, cirrhosis or biliary
     obstruction" negates all three). Pseudo-negations are not cues: "not only", "not
     necessarily", "no change", "no increase", and the double negatives "cannot be excluded",
     "cannot rule out", "not ruled out", "not excluded" (these leave the mention affirmed);
     an entry (differential line) with probability >= 10 % is judged on its label alone;
   * **hypothetical** — a statement about future risk, prevention or testing, not about the
     present state: preceded in the clause by risk of/for, at risk, developing, prevention,
     avoid, screen/monitor/test/check/evaluate for, vaccination, if, whether, progression to,
     (family) history of; or followed within two words by risk, serology, screening,
     vaccination, testing, panel, antibodies, antigen, markers, prevention;
   * **affirmed** — anything else, including hedged suggestions ("possible hepatitis",
     "consistent with haemolytic anaemia", "hepatitis cannot be excluded", "Hepatitis
     (probability 40%)").

4. A **trap flag fires** only if at least one of its mentions is *affirmed*. An expected
   **keyword or scoring system is hit** if at least one mention is affirmed or hypothetical
   (naming a test or a risk counts as engaging with it; a negated or sub-10 % mention does not).

Word windows, the 10 % threshold and the cue lists are constants below; they are part of the
sealed rubric, and changing them changes the grader version.
"""

from __future__ import annotations

import bisect
import enum
import functools
import itertools
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, cast

from sealedeval.suites.bloodpanel.vocabulary import SYNONYMS

LOW_PROBABILITY_PERCENT: Final = 10.0
"""A differential given less than this probability is not a diagnosis."""

PRE_WINDOW: Final = 15
"""Words a pre-negation or hypothetical cue reaches forward (NegEx used 5; lists need more)."""

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
        if "\u2014" in t or "\u2013" in t:
            t = t.replace("\u2014", " ; ").replace("\u2013", " ; ")
        t = t.lower()
        if not t.isascii():
            for char in set(_NON_ASCII.findall(t)):
                plain = _FOLD.get(char)
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
        t = t.replace(" - ", " ; ").replace("-", " ")
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
_TERMINATOR: Final = re.compile(
    r"[;:]|(?:but|however|although|though|whereas|while|which|who|except"
    r"|nevertheless|nonetheless|consistent with|suggest(?:s|ing|ive of)|indicat(?:es|ing|ive of)"
    r"|confirm(?:s|ing)|due to|secondary to|because)\b"
)
_PSEUDO: Final = re.compile(
    r"(?:not only|not necessarily|not just|no change|no significant change|no increase"
    r"|(?:cannot|can not|can't|could not) (?:be )?(?:excluded|ruled out|exclude|rule out)"
    r"|not (?:been |be )?(?:excluded|ruled out))\b"
)
_PRE_NEG: Final = re.compile(
    r"(?:not (?:consistent with|suggestive of|indicative of|compatible with|diagnostic of)"
    r"|inconsistent with|incompatible with|no|not|without|never|neither|nor|none of"
    r"|absence of|absent|free of|negative for|lack of|lacks|lacking|denies|denied"
    r"|exclud(?:e|es|ed|ing)|exclusion of|rul(?:e|es|ed|ing) out|unlikely|rather than|unlike"
    r"|as opposed to|argues? against|against"
    r"|(?:differentiat|distinguish)\w*\b[^.;:]{0,60}?\bfrom)\b"
)
_POST_NEG: Final = re.compile(
    r"(?:unlikely|improbable|excluded|ruled out|absent|negative|not (?:present|supported|seen"
    r"|evident|detected|indicated|likely|suggested|confirmed|found|the cause))\b"
)
_HYPO_PRE: Final = re.compile(
    r"(?:risks? (?:\w+ ){0,2}?(?:of|for)|at risk|develop(?:s|ed|ing|ment of)?"
    r"|prevent(?:s|ing|ion of|ion)?|avoid(?:s|ing)?|screen(?:ing)? for|monitor(?:ing)? for"
    r"|surveillance for|vaccinat\w*|immuni[sz]\w*|in case of|if|whether"
    r"|should (?:\w+ ){0,3}?develop|progress(?:ion|es|ing)? (?:to|towards)|evaluat\w* for"
    r"|assess\w* for|test(?:s|ing)? for|check(?:s|ing)? for|work ?up for|history of)\b"
)
_HYPO_POST: Final = re.compile(
    r"\W*(?:\w+\W+){0,2}?(?:risks?|serology|serologies|screening|vaccin\w*|immuni[sz]\w*"
    r"|testing|tests?|panel|antibod\w*|antigens?|markers?|prevention|prophylaxis)\b"
)
_PERCENT: Final = re.compile(r"(?<![\w.,])(\d{1,3}(?:[.,]\d+)?)\s*%")
_PROB_WORD: Final = re.compile(
    r"(?:probability|probabilities|probable|likelihood|chance|odds|estimated|pre ?test"
    r"|posterior|likely)\b"
)
_NUMBER: Final = re.compile(r"\d{1,3}(?:[.,]\d+)?")
_PROB_PREFIX: Final = re.compile(
    r"(?:probability|likelihood|estimated|approximately|approx\.?|about|~|p\s*=)\s*(?:of\s*)?$"
)
_BULLET: Final = re.compile(r"^\s*(?:[*\u2022]\s*|\d{1,2}[.)]\s+)")
_ENTRY_SEPARATORS: Final = (":", "(", ";", "=")

# Words that can start a cue of each family: a sentence without any of them skips that
# family's regex entirely (most sentences of a report carry no cue at all).
_PUNCT: Final = "!\"#$%&'()*+,./:;<=>?@[\\]^_`{|}~\u2014\u2013\u2026"


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_PRE_NEG_WORDS: Final = _wordset(
    "no not without never neither nor none absence absent free negative lack lacks lacking "
    "denies denied exclude excludes excluded excluding exclusion rule rules ruled ruling "
    "unlikely inconsistent incompatible rather unlike opposed argue argues against "
    "differentiate differentiates differentiated differentiating differentiation distinguish "
    "distinguishes distinguished distinguishing"
)
_POST_NEG_WORDS: Final = _wordset("unlikely improbable excluded ruled absent negative not")
_HYPO_PRE_WORDS: Final = _wordset(
    "risk risks develop develops developed developing development prevent prevents preventing "
    "prevention preventive avoid avoids avoiding screen screening monitor monitoring "
    "surveillance vaccinate vaccinated vaccinating vaccination vaccinations immunize immunise "
    "immunized immunised immunization immunisation case if whether progress progresses "
    "progressing progression evaluate evaluated evaluating evaluation assess assessed assessing "
    "assessment test tests testing check checks checking work workup history"
)
_HYPO_POST_WORDS: Final = _wordset(
    "risk risks serology serologies screening vaccine vaccines vaccination vaccinations "
    "immunization immunisation testing test tests panel antibody antibodies antigen antigens "
    "marker markers prevention prophylaxis"
)
_PROB_WORDS: Final = _wordset(
    "probability probabilities probable likelihood chance odds estimated pretest pre posterior "
    "likely"
)


def parse_percent(text: str) -> float:
    """``"12,5"`` or ``"12.5"`` → 12.5 (decimal commas occur in localised reports)."""
    return float(text.replace(",", "."))


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


class _Sentence:
    """Cue positions of one sentence, computed only for the cue families its words trigger."""

    __slots__ = (
        "_terminators",
        "has_prob_word",
        "hypo_post",
        "hypo_pre",
        "percents",
        "post_neg",
        "pre_neg",
        "start",
        "text",
    )

    def __init__(self, start: int, text: str) -> None:
        self.start = start
        self.text = text
        words = set(map(str.strip, text.split(), itertools.repeat(_PUNCT)))
        pre = not words.isdisjoint(_PRE_NEG_WORDS)
        post = not words.isdisjoint(_POST_NEG_WORDS)
        pseudo = list(_cues(_PSEUDO, text)) if pre or post else []
        self.pre_neg = _spans(_PRE_NEG, text, pseudo) if pre else []
        self.post_neg = _spans(_POST_NEG, text, pseudo) if post else []
        self.hypo_pre = (
            list(_cues(_HYPO_PRE, text)) if not words.isdisjoint(_HYPO_PRE_WORDS) else []
        )
        self.hypo_post = not words.isdisjoint(_HYPO_POST_WORDS)
        prob = "%" in text and not words.isdisjoint(_PROB_WORDS)
        self.percents = (
            [(m.start(), parse_percent(m.group(1))) for m in _PERCENT.finditer(text)]
            if prob
            else []
        )
        self.has_prob_word = list(_cues(_PROB_WORD, text)) if prob else []
        self._terminators: list[int] | None = None

    @property
    def terminators(self) -> list[int]:
        """Start offsets of the clause terminators (computed on first use)."""
        if self._terminators is None:
            self._terminators = [a for a, _ in _cues(_TERMINATOR, self.text)]
        return self._terminators

    @property
    def has_cues(self) -> bool:
        return bool(
            self.pre_neg or self.post_neg or self.hypo_pre or self.hypo_post or self.has_prob_word
        )


def _words(text: str) -> int:
    return len(_WORD.findall(text))


def _same_clause(sent: _Sentence, a: int, b: int) -> bool:
    """No clause terminator starts in ``[a, b)``."""
    return bisect.bisect_left(sent.terminators, a) == bisect.bisect_left(sent.terminators, b)


def _clause_bounds(sent: _Sentence, pos: int) -> tuple[int, int]:
    i = bisect.bisect_right(sent.terminators, pos)
    lo = sent.terminators[i - 1] if i > 0 else 0
    hi = sent.terminators[i] if i < len(sent.terminators) else len(sent.text)
    return lo, hi


def _text_polarity(sent: _Sentence, s: int, e: int) -> tuple[Polarity, float | None]:
    """Status of a mention at ``[s, e)`` (sentence-relative) that is not a differential label."""
    if not sent.has_cues:
        return Polarity.AFFIRMED, None
    text = sent.text
    lo, hi = _clause_bounds(sent, s)
    if any(lo <= ps < hi for ps, _ in sent.has_prob_word):
        in_clause = [(abs(pp - s), p) for pp, p in sent.percents if lo <= pp < hi]
        if in_clause:
            p = min(in_clause)[1]
            if p < LOW_PROBABILITY_PERCENT:
                return Polarity.LOW_PROBABILITY, p
    for _cs, ce in sent.pre_neg:
        if ce <= s and _same_clause(sent, ce, s) and _words(text[ce:s]) <= PRE_WINDOW:
            return Polarity.NEGATED, None
    for cs, _ce in sent.post_neg:
        if cs >= e and _same_clause(sent, e, cs) and _words(text[e:cs]) <= POST_WINDOW:
            return Polarity.NEGATED, None
    for _cs, ce in sent.hypo_pre:
        if ce <= s and _same_clause(sent, ce, s) and _words(text[ce:s]) <= PRE_WINDOW:
            return Polarity.HYPOTHETICAL, None
    if sent.hypo_post and _HYPO_POST.match(text, e, hi):
        return Polarity.HYPOTHETICAL, None
    return Polarity.AFFIRMED, None


def _label_polarity(label: str, s: int, e: int, p: float) -> Polarity:
    """Status of a mention inside a differential label with probability ``p``."""
    if p < LOW_PROBABILITY_PERCENT:
        return Polarity.LOW_PROBABILITY
    pol, _ = _text_polarity(_Sentence(0, label), s, e)
    # A probability >= 10 % is the engine committing to the condition; only words inside the
    # label ("No hepatitis: 90%", "Diabetes risk: 15%") can take that back.
    return Polarity.AFFIRMED if pol is Polarity.LOW_PROBABILITY else pol


class Document:
    """A report's text prepared for many term look-ups.

    Build once per graded response: the text is normalised once; the sentence and the line
    around a mention are located (and their cues analysed) only when a term is found there.

    Args:
        items: The report's text units (sentences are split inside them; each line is a
            candidate differential line).
        differential: Structured ``(condition, probability in %)`` pairs, if the response had them.
    """

    __slots__ = ("_differential", "_entries", "_lines", "_sentences", "_text")

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
        self._entries: dict[int, tuple[int, int, float] | None] = {}
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

    def _entry_at(self, s: int, e: int) -> tuple[int, int, float] | None:
        """The differential line whose label contains ``[s, e)``, if any."""
        lo, hi = self._line(s)
        if lo not in self._entries:
            line = self.text[lo:hi]
            found = _entry(line) if "%" in line else None
            self._entries[lo] = None if found is None else (lo + found[0], lo + found[1], found[2])
        entry = self._entries[lo]
        if entry is not None and entry[0] <= s and e <= entry[1]:
            return entry
        return None

    def _iter_mentions(self, term: str, snippets: bool) -> Iterator[Mention]:
        matcher = term_matcher(term)
        for s, e in matcher.iter_spans(self.text):
            entry = self._entry_at(s, e)
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
            if entry is not None:
                ls, le, p = entry
                pol = _label_polarity(self.text[ls:le], s - ls, e - ls, p)
                yield Mention(term, pol, snippet, p, "entry")
                continue
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
        entry = self._entry_at(s, e)
        if entry is not None:
            ls, le, p = entry
            return _label_polarity(self.text[ls:le], s - ls, e - ls, p)
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
