"""The comparison of what a cell printed with its `expect:`; it reads no file.

`compare` is strict after `normalize` (whitespace runs become one space, spaces just
inside brackets go), so NumPy's padding never matters but every digit does. A cell's
`tolerance:` (`rel R`, `abs A`, `magnitude`) relaxes only the numbers its expectation
marks with `~`. `carry_marks` keeps those marks when update mode rewrites an expectation.
"""

import dataclasses
import difflib
import math
import re


def normalize(text: str) -> str:
    """`[5.5 1.  4. ]` -> `[5.5 1. 4.]`, `[ 1. -2.]` -> `[1. -2.]`; digits are never touched."""
    text = re.sub(r"\s+", " ", text.strip())
    return re.sub(r" ([\])])", r"\1", re.sub(r"([\[(]) ", r"\1", text))


# A number: optional sign, digits with an optional point (`1.`, `.5`, `2.50`), an
# optional exponent; or nan / inf. Not when glued to a name (`x1`, `float64`).
NUMBER = re.compile(
    r"(?<![\w.])"
    r"(?P<num>[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf(?:inity)?|nan))"
    r"(?![\w])",
    re.IGNORECASE,
)


def tokenize(text: str):
    """Split normalized text into (texts, numbers): len(texts) == len(numbers) + 1."""
    parts = NUMBER.split(normalize(text))  # NUMBER's one group: the numbers are kept
    return parts[0::2], parts[1::2]


NOISY = "~"  # in an expectation, `~3e-10`: this number is noisy, compare it within the tolerance


def tokenize_expected(text: str):
    """Like tokenize, for an expectation: (texts, numbers, noisy flags), `~` marks removed."""
    texts, numbers = tokenize(text)
    noisy = [before.endswith(NOISY) for before in texts[:-1]]
    texts = [t[:-1] if mark else t for t, mark in zip(texts, noisy + [False])]
    return texts, numbers, noisy


def carry_marks(old_expected: str, new_text: str) -> str:
    """`new_text` with a `~` before each number whose counterpart in `old_expected` had one
    (none if the count of numbers changed: the marks cannot be matched then)."""
    _, old_numbers, noisy = tokenize_expected(old_expected)
    if not any(noisy) or len(NUMBER.findall(new_text)) != len(old_numbers):
        return new_text
    marks = iter(noisy)
    return NUMBER.sub(lambda number: NOISY + number[0] if next(marks) else number[0], new_text)


class ToleranceError(ValueError):
    pass


TOLERANCE_HELP = "write `tolerance: rel R`, `tolerance: abs A` or `tolerance: magnitude`"


@dataclasses.dataclass(frozen=True)
class Tolerance:
    kind: str  # "rel", "abs" or "magnitude"
    amount: float = 0.0

    def __str__(self):
        return self.kind if self.kind == "magnitude" else f"{self.kind} {self.amount:g}"

    def close(self, expected: float, got: float) -> bool:
        if not (math.isfinite(expected) and math.isfinite(got)):  # nan matches nan, inf itself
            return expected == got or (math.isnan(expected) and math.isnan(got))
        if self.kind == "abs":
            return abs(got - expected) <= self.amount
        if self.kind == "rel":
            return abs(got - expected) <= self.amount * abs(expected)
        # magnitude: within a factor of 10, so of the same sign; 0 only matches 0
        return got == 0 if expected == 0 else 0.1 <= got / expected <= 10


def parse_tolerance(spec) -> Tolerance | None:
    """`rel 0.5`, `abs 1e-9`, `magnitude` -> Tolerance; None -> None; else ToleranceError."""
    if spec is None:
        return None
    words = str(spec).split()
    if words == ["magnitude"]:
        return Tolerance("magnitude")
    if len(words) == 2 and words[0] in ("rel", "abs"):
        try:
            amount = float(words[1])
        except ValueError:
            amount = float("nan")
        if amount >= 0:
            return Tolerance(words[0], amount)
    raise ToleranceError(f"unknown tolerance {spec!r}: {TOLERANCE_HELP}")


def compare(expected: str, got: str, tolerance=None) -> str | None:
    """None when `got` matches `expected`; otherwise what differs, in one line."""
    if not isinstance(tolerance, Tolerance):  # a `tolerance:` option as the cell wrote it
        tolerance = parse_tolerance(tolerance)
    exp_texts, exp_numbers, noisy = tokenize_expected(expected)
    if tolerance is None:
        if any(noisy):
            raise ToleranceError(f"`{NOISY}` marks a noisy number but the cell declares no "
                                 f"tolerance: {TOLERANCE_HELP}")
        same = normalize(expected) == normalize(got)
        return None if same else "printed text differs from expect:"
    if not any(noisy):
        raise ToleranceError(f"tolerance {tolerance} is declared but no number of expect: "
                             f"is marked noisy: write `{NOISY}` before each noisy number")
    got_texts, got_numbers = tokenize(got)
    if len(exp_numbers) != len(got_numbers):
        return (f"printed {len(got_numbers)} numbers, expect: has {len(exp_numbers)} "
                f"(tolerance {tolerance})")
    for a, b in zip(exp_texts, got_texts):
        if a != b:
            return f"text between numbers differs: expected {a!r}, got {b!r}"
    for position, (a, b, mark) in enumerate(zip(exp_numbers, got_numbers, noisy), 1):
        if mark and not tolerance.close(float(a), float(b)):
            return f"number {position} is {b}, expected ~{a} within tolerance {tolerance}"
        if not mark and a != b:
            return f"number {position} is {b}, expected exactly {a} (not marked {NOISY})"
    return None


def unified_diff(expected: str, got: str) -> str:
    return "\n".join(difflib.unified_diff(expected.splitlines(), got.splitlines(), "expected",
                                         "got", lineterm="", n=2))


def has_marks(text: str) -> bool:
    return any(tokenize_expected(text)[2])


def indent(text: str, prefix="    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


def canonical_expectation(text: str) -> str:
    """The text update mode stores: lines right-stripped, no blank lines at the ends."""
    text = "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")
    return text + "\n" if text else ""
