"""What counts as naming a correctness boundary or a performance trade-off (the pass rule's named
ideas, service/grading/passrule.py `named_requirement`; docs/grading.md, "The pass rule").

A word is not a named idea. A sentence of the written answers (or two, the second opening with a
link such as 但, 代价, 否则, but, otherwise) names one when

- it is a candidate: one of the idea's `patterns` matches it and is not negated ("不会越界",
  "no out-of-bounds access"), or it holds the quote of one of the idea's `concepts` that the
  written-answer scorer found;
- the scorer did not read it as a misconception (or close to one), a denied step or a retraction:
  a sentence stating a misconception never meets a requirement;
- a **boundary** also says what happens at it: something goes wrong or must be handled (错, 偏大,
  越界, 溢出, 必须, 否则, wrong, overflow, must, …: `EFFECT` and the idea's `effect`), not negated
  ("不会出错", "it does not matter" state no boundary);
- a **trade-off** names both sides: what it buys (`GAIN` and the idea's `gain`: 少读, 只读一次, 省,
  faster, fewer, read once, …) and what it costs (`COST` and the idea's `cost`: 代价, 开销, 额外,
  寄存器压力, 放不下, extra, overhead, more registers, must fit, …), two different words, neither
  negated ("没有额外开销" costs nothing).

Matching reads the text as the written-answer scorer does (NFKC, lower case; service/grading/freetext.py)
and quotes the student's own words.
"""
from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from service.grading.freetext import _negated, _sentence_of, _sentences, _Text

# A boundary's effect: where correctness breaks, or what must be done about it.
EFFECT = (
    r"错|不对|不正确|偏大|偏小|偏离|多出|多加|少算|漏掉|污染|溢出|下溢|越界|越过|读到|写到|写进|覆盖|踩|"
    r"nan|抵消|丢失|丢掉|失去|精度|翻倍|漂移|竞争|除以\s*0|除零|崩|不准|"
    r"必须|需要|要(用|把|先|在|重新|除以|除|乘|加|减|清零|填|写|带|挡)|得用|得先|应该|才能|才会|保证|确保|防止|以免|免得|挡住|"
    r"否则|不然|要不然|"
    r"\bwrong|\bincorrect|\berror|\bbreaks?\b|\bbroken|\bfails?\b|\bcorrupt\w*|\bpollut\w*|\bcontaminat\w*|"
    r"overflow\w*|underflow\w*|out[- ]of[- ]bounds|\bpast the end|\bbeyond|\bgarbage|\bnan\b|"
    r"too (large|small|big|high|low)|overestimat\w*|underestimat\w*|\binflat\w*|\bbias\w*|"
    r"\bcancel\w*|\blos(e|es|t|ing)\b|\bdrift\w*|\brace\w*|\bdoubl\w*|\boverwrit\w*|"
    r"\bmust\b|\bneeds?\b|\bhas to\b|\bhave to\b|\bshould\b|\brequire\w*|\bensur\w*|\bguarantee\w*|"
    r"\bprevent\w*|\bguard\w*|\botherwise\b|\belse\b"
)
# 提升/提高 buys speed, except where what is raised is the precision ("把累加提升到 float64", "精度提高"): that is
# the correctness side, and a sentence naming fp64 as a remedy was read as a gain. And 两遍 is a cost, except as
# the name of an algorithm ("两遍法", "两遍算法数值稳定"): a sentence naming the two-pass algorithm was read as
# paying for a second pass. Off (NAMES_NOT_SIDES = False): both words as before.
NAMES_NOT_SIDES = True
_PRECISION = (r"\s*(到|为|成|至|成为)?\s*(fp\s*64|float\s*64|fp\s*32|float\s*32|double|双精度|单精度|高精度|"
              r"更高(的)?精度|精度|位宽|64\s*位|32\s*位)")
_RAISED = (rf"(?<!精度)(?<!精度\s)(提升|提高)(?!{_PRECISION})" if NAMES_NOT_SIDES else r"提升|提高")
_NOT_A_NAME = r"(?!\s*(的)?\s*(法|算法|方法|公式|做法|写法|版本|方案|思路))" if NAMES_NOT_SIDES else ""
# What a trade-off buys.
GAIN = (
    r"少读|少写|少一(次|遍|趟|轮|个)|少了|省(掉|去|下|了)|免(去|掉)|节省|节约|减少|降低|减半|一半|"
    r"只(需要?)?(读|加载|写|扫描?|访问|launch|启动)(了)?(一|1)\s*(次|遍|趟)|(读|加载|扫描?)(一|1)\s*(次|遍|趟)|"
    r"一次(读|加载|扫描|launch)|更快|加速|提速|快了|快\s*\d|\d\s*倍|" + _RAISED + r"|复用|重用|"
    r"(不|无)(需要?|必|用)[^，。,.;；]{0,12}?(写回|写出|读回|来回|往返|同步|launch|启动|第二|额外|物化|中间|原子|atomic)|"
    r"避免.{0,16}(读|写|同步|launch|启动|往返|原子|atomic|物化|中间|显存|hbm|内核|kernel)|"
    r"(留|放|待)在(寄存器|片上)|不(落|写回)?(显存|hbm)|合并成|融合|吞吐|并行|"
    r"\bfewer\b|\bless (traffic|memory|work|data|bandwidth|time)|\bsav(e|es|ed|ing)\b|\breduc\w*|\bhalv\w*|"
    r"\bhalf (the|of)\b|\bonly once\b|\b(read|load|loaded|scan|scanned|touch(ed)?|written|write)s? (\w+ ){0,2}once\b|"
    r"\bonce instead\b|\bfaster\b|\bspeed\s*-?ups?\b|\bcheaper\b|\bthroughput\b|\breus\w*|"
    r"\bavoid\w* (\w+ ){0,3}(round[- ]trips?|sync\w*|launch\w*|kernels?|traffic|reads?|writes?|materiali\w*|"
    r"atomics?|hbm|memory)|\bno (extra|second|intermediate)\b|\bwithout (a |an |any )?(second|extra|intermediate|"
    r"materiali\w*|sync\w*|atomic\w*|round[- ]trip)|\b(one|single) (pass|launch|kernel|read)\b|\bfus(ed|ion|ing)\b|"
    r"\b(stay|stays|kept|keeps?) (\w+ ){0,2}(in|on) (registers|chip|sram)|\bparallel\w*|\bbounded\b"
)
# What a trade-off costs.
COST = (
    r"(代价|开销|成本)(?!\s*(为|是|也)?\s*(零|0|没有|很小))|付出|牺牲|缺点|坏处|额外|多(一|了|出|做|花)?\s*(一|1|2|两|几)?\s*(次|遍|趟|轮|个|份)?\s*"
    r"(读|写|缩放|乘|同步|launch|启动|寄存器|program|内核|kernel|计算|atomic|原子|流量|循环|内存|显存|缓冲|buffer|"
    r"指令|开销)|增加|占用|浪费|白算|空转|溢出到|spill|放不下|放不进|装不下|容不下|(要|必须|得|需要)[^，。,.]{0,8}"
    r"(放进|放在|放得下|装进|装得下|容纳)|受限|限制|上限|更慢|变慢|慢了|争用|串行|两次\s*launch|两个(内核|kernel)|"
    r"第二个(内核|kernel)|再(launch|启动)|(两|2)\s*(次|遍|趟)(全局)?(读|扫描|访存|显存|launch|启动)?"
    + _NOT_A_NAME + r"|翻倍|两倍|"
    r"寄存器(压力|不够|有限|数量)|复杂|"
    r"\bcost\w*(?! (nothing|no\b|zero|little))|\boverhead\b(?! is (zero|negligible))|"
    r"\bprice\b|\bexpense\b|\bpenalt\w*|\bdownside\b|\bsacrific\w*|"
    r"\bmore (\w+ ){0,2}(registers?|programs?|launch\w*|work|traffic|memory|reads?|writes?|atomics?|passes|scans?|"
    r"compute|instructions?|loop trips|iterations|lanes?)|\bextra\b|\badditional\b|\bwast\w*|\bpressure\b|"
    r"\bspill\w*|\blimit\w*|\bslower\b|\bcontention\b|\bserializ\w*|\bmust fit\b|\b(has|have|needs?) to fit\b|"
    r"\b(does ?n't|does not|cannot|can't|won't|will not) fit\b|\bsecond (kernel|launch|pass|reduction)\b|"
    r"\btwo (kernels|launches|passes|reads|scans)\b|\btwice\b|\bdoubles?\b|\bidle\b|\bcomplex\w*|\bharder\b"
)
# A second sentence that carries on the first one's idea: its other side (但, 代价是, but, the cost),
# or its effect (否则, 所以, otherwise, so).
_CARRIES_ON = re.compile(r"\W{0,3}(但|但是|不过|然而|可是|只是|代价|缺点|坏处|好处|换来|换取|"
                         r"所以|因此|因而|于是|否则|不然|这样|结果|从而|"
                         r"\bbut\b|\bhowever\b|\byet\b|\bthe (cost|price|downside|catch)\b|"
                         r"\bin (exchange|return)\b|\bon the other hand\b|\bthis costs\b|\bso\b|\bthus\b|\btherefore\b|"
                         r"\botherwise\b|\bas a result\b)", re.IGNORECASE)
# A word that says "here is the cost" and names nothing more: quoted with what follows it in its clause.
_MARKER = re.compile(r"代价|开销|成本|缺点|坏处|付出|\bcosts?\b|\bprice\b|\bdownside\b|\boverhead\b|\bat the expense\b",
                     re.IGNORECASE)
_CLAUSE_END = re.compile(r"[,;!?\n。]|\.(?=\s|$)")  # in the normalised text (NFKC: ，→ ,)


def _clause_end(text: str, start: int, limit: int) -> int:
    """Where the clause that goes on at `start` ends (a comma inside brackets ends none), by `limit`."""
    depth = 0
    for i in range(start, limit):
        depth += text[i] in "([（" and 1 or text[i] in ")]）" and -1 or 0
        if depth <= 0 and _CLAUSE_END.match(text, i):
            return i
    if limit < len(text) and re.match(r"\w", text[limit]) and text[limit - 1].isascii():
        space = text.rfind(" ", start, limit)  # never inside a word
        return space if space > start else limit
    return limit
# A trade-off's two sides told in two sentences with no link word between them ("融合后只读一次 x、写一次 y。整行要放进
# 寄存器，寄存器压力变大。"): the sentence naming one side is read with the next when that one names the other side
# (probe of 2026-12-05: the pair was read only when the second sentence opened with 但, 代价, but, …). Off: only
# with a link word.
SPLIT_TRADEOFF = True
# The scorer's doubts that, like a misconception, keep a sentence from naming anything. Not a dismissal
# ("不需要写回 HBM" is a trade-off's gain; a dismissed boundary states no effect: "不需要再 mask").
DOUBTS = ("misconception_like", "denied_step", "retracted")


@dataclass
class Reading:
    """One written text as the scorer reads it: the normalised text, its sentences, and where a raw
    position of the student's text is in it."""

    text: _Text
    spans: list[tuple[int, int]]

    def quote(self, start: int, end: int) -> str:
        """The student's own words of normalised text[start:end]."""
        text = self.text
        if text.offsets is None:
            return text[start:end].strip()
        a = text.offsets[start]
        b = text.offsets[end] if end < len(text) else len(text.original)
        return text.original[a:b].strip()

    def locate(self, quote: str) -> tuple[int, int] | None:
        """Where a quote of the student's words (a scorer's evidence, `…` at a cut) is in the text."""
        inner = quote.strip().strip("…").strip()
        if not inner:
            return None
        text = self.text
        if text.offsets is None:
            at = text.find(inner.lower())
            return (at, at + len(inner)) if at >= 0 else None
        raw = text.original.find(inner)
        if raw < 0:
            return None
        return (bisect.bisect_left(text.offsets, raw), bisect.bisect_left(text.offsets, raw + len(inner)))

    def sentences_at(self, start: int, end: int) -> set[int]:
        """The sentences that the middle of text[start:end] lies in (a quote holds up to 20 characters of
        context either side of what the scorer matched)."""
        lo, hi = start + min(20, (end - start) // 3), end - min(20, (end - start) // 3)
        return {i for i, (a, b) in enumerate(self.spans) if a <= hi and lo <= b}

    def sentences_quoting(self, quotes: Sequence[str]) -> set[int]:
        """The sentences that any of `quotes` lies in (those found in the text)."""
        found: set[int] = set()
        for quote in quotes:
            where = self.locate(quote)
            if where is not None:
                found |= self.sentences_at(*where)
        return found


def reading(written: str) -> Reading:
    """`written` read once for all of a pass rule's named ideas (each asks about the same text in each of
    the report's languages): the last few kept, those of at most READ_KEPT_CHARS characters."""
    return _kept_reading(written) if len(written) <= READ_KEPT_CHARS else _reading(written)


# A kept reading costs about 40 bytes a character (the text's offsets); the written texts of one
# submission are up to 20 answers of 16 384 characters.
READ_KEPT_CHARS = 8192


def _reading(written: str) -> Reading:
    text = _Text.of(written)
    return Reading(text, _sentences(text))


_kept_reading = functools.lru_cache(maxsize=8)(_reading)


@functools.lru_cache(maxsize=256)
def _regex(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


# An English negation up to two words before (the scorer's window is 12 characters: "nothing goes
# wrong" held "othing goes " and read as stated).
_NEGATED_BEFORE = re.compile(r"(\b(nothing|never|no|not|none|cannot|without)\b|n't)(\W+[a-z_]+){0,2}\W*$")


def _negated_here(r: Reading, start: int) -> bool:
    sentence_start = r.spans[_sentence_of(r.spans, start)][0]
    return _negated(r.text, start, r.spans) or bool(
        _NEGATED_BEFORE.search(r.text, max(sentence_start, start - 30), start))


def stated(r: Reading, patterns: Sequence[str], lo: int, hi: int) -> list[tuple[int, int]]:
    """Where one of `patterns` matches text[lo:hi], not negated."""
    if not patterns:
        return []
    return [m.span() for m in _regex(tuple(patterns)).finditer(r.text, lo, hi)
            if m.end() > m.start() and not _negated_here(r, m.start())]


@dataclass
class Verdict:
    """A candidate sentence (or pair) and what it lacks: `why` is empty when it names the idea."""

    quote: str
    via: str
    why: str = ""
    sides: dict[str, str] = field(default_factory=dict)


def judge(kind: str, *, written: str, patterns: Sequence[str], concept_quotes: Sequence[tuple[str, str]],
          excluded_quotes: Sequence[str], effect: Sequence[str] = (), gain: Sequence[str] = (),
          cost: Sequence[str] = (), stuffed_quotes: Sequence[str] = ()) -> list[Verdict]:
    """Every candidate sentence of `written` for the idea, in the text's order, each with its verdict;
    the first that names it is the first with an empty `why`. `concept_quotes`: (question:concept, quote)
    of the idea's concepts the scorer found; `excluded_quotes`: the quotes of the misconceptions and
    doubts it read; `stuffed_quotes`: the concept quotes of the answers it read as keyword lists (a list of
    terms names no idea, whatever its terms: their sentences are `stuffing`)."""
    r = reading(written)
    spans, text = r.spans, r.text
    via: dict[int, str] = {}
    for ref, quote in concept_quotes:
        where = r.locate(quote)
        if where is not None:
            for i in sorted(r.sentences_at(*where)):
                via.setdefault(i, ref)
    negated: set[int] = set()
    if patterns:
        regex = _regex(tuple(patterns))
        for i, (a, b) in enumerate(spans):
            if i in via:
                continue
            found = [m for m in regex.finditer(text, a, b) if m.end() > m.start()]
            # A trade-off's gain is often a negation ("不写回显存", "no atomics"): its sides are read for
            # negation instead (below); a boundary's condition is not ("这里不会越界" names none).
            if found and kind == "performance_tradeoff" or any(not _negated_here(r, m.start()) for m in found):
                via[i] = "pattern"
            elif found:
                negated.add(i)
    wrong, listed = r.sentences_quoting(excluded_quotes), r.sentences_quoting(stuffed_quotes)
    verdicts: list[Verdict] = []
    split_read: dict[int, Verdict] = {}  # a verdict read over two sentences: what its first said alone
    for i in sorted({*via, *negated}):
        a, b = spans[i]
        if i in wrong or i in listed:
            why = "misconception" if i in wrong else "stuffing"
            verdicts.append(Verdict(r.quote(a, b), via.get(i, "pattern"), why))
            continue
        if i not in via:
            verdicts.append(Verdict(r.quote(a, b), "pattern", "negated"))
            continue
        # The sentence, or the sentence with the next one when that one carries it on.
        pair = i + 1 < len(spans) and i + 1 not in wrong and bool(
            _CARRIES_ON.match(text, spans[i + 1][0], spans[i + 1][1]))
        end = spans[i + 1][1] if pair else b
        if kind == "correctness_boundary":
            effects = stated(r, (EFFECT, *effect), a, end)
            if effects:
                verdicts.append(Verdict(r.quote(a, end), via[i], sides={"effect": r.quote(*effects[0])}))
            else:
                verdicts.append(Verdict(r.quote(a, b), via[i], "no_effect"))
            continue
        gains = stated(r, (GAIN, *gain), a, end)
        costs = stated(r, (COST, *cost), a, end)
        one_sided = Verdict(r.quote(a, b), via[i], "no_cost" if gains else "no_gain" if costs else "one_sided")
        if SPLIT_TRADEOFF and not pair and (bool(gains) != bool(costs)) and i + 1 < len(spans) \
                and i + 1 not in wrong | listed:
            # one side here, the other in the next sentence with no link word: "融合后只读一次 x。整行要放进寄存器，
            # 寄存器压力变大。" (a next sentence naming the same side, or neither, carries nothing on)
            c, d = spans[i + 1]
            other = stated(r, (COST, *cost), c, d) if gains else stated(r, (GAIN, *gain), c, d)
            if other:
                end = d
                gains, costs = (gains, other) if gains else (other, costs)
                split_read[len(verdicts)] = one_sided
        # an explicit cost ("代价是…", "at the cost of …") first, quoted to the end of its clause
        costs.sort(key=lambda c: not _MARKER.match(text, c[0]))
        both = next(((g, c) for c in costs for g in gains if g[1] <= c[0] or c[1] <= g[0]), None)
        if both is not None:
            (g0, g1), (c0, c1) = both
            if _MARKER.match(text, c0):
                c1 = _clause_end(text, c1, min(end, c1 + 60))
            verdicts.append(Verdict(r.quote(a, end), via[i], sides={"gain": r.quote(g0, g1), "cost": r.quote(c0, c1)}))
        else:
            verdicts.append(one_sided)
    # Two sentences read as one are weaker evidence than one sentence: where a sentence (or a linked pair)
    # names both sides, the split readings are only what each sentence says alone ("还可以把累加提升到
    # float64。…两遍…" read as gain and cost before the example's own "只读一次…代价是…").
    if any(not v.why and k not in split_read for k, v in enumerate(verdicts)):
        verdicts = [split_read.get(k, v) for k, v in enumerate(verdicts)]
    return verdicts
