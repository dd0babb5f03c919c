"""A deterministic, varied text sample for tokenizer parity tests."""

import random
import unicodedata

_PIECES = (
    "Hello", "WORLD", "naïve", "café", "Crème brûlée", "Zoë", "ÅNGSTRÖM",
    "İstanbul", "ΟΔΥΣΣΕΥΣ", "Σίσυφος", "straße", "ǅemal", "ﬁancé", "Ｆｕｌｌ",
    "日本語のテキスト", "中文，标点（全角）：测试。", "한국어 텍스트", "ไทย",
    "Привет, мир!", "مرحبا", "עברית", "हिन्दी", "🙂👍🏽", "€100", "5½",
    "x²", "™", "©2020", "a—b–c", "«quoted»", "“curly” ‘quotes’", "…", "¿Qué?",
    "¡Hola!", "don't", "e.g.", "U.S.A.", "3.14159", "$5,000", "user@example.com",
    "https://example.org/path?q=1&r=2", "snake_case", "camelCaseWord",
    "tab\there", "line\u2028sep", "para\u2029sep", "nb\u00a0space",
    "ideo\u3000space", "zero\u200bwidth", "soft\u00adhyphen", "bom\ufeffmark",
    "bell\x07char", "nul\x00char", "esc\x1bchar", "replacement\ufffdchar",
    "vt\x0bff\x0cchars", "del\x7fchar", "\x85nel", "priv\ue000ate",
    "combining e\u0301 a\u0300", "ﾊﾝｶｸ", "①②③", "Ⅻ", "ŉ", "ǰ", "ß", "ﬀ",
    "\u037e", "\u0387", "\u1fef", "`~!@#$%^&*()_+-={}[]|\\:;\"'<>,.?/",
    "𠀀𠀁", "\U0002f800", "\uf900", "ⅰⅱ", "Ǆ", "ſ", "K", "Ω", "ﬆ",
)
_LETTERS = "abcdefghijklmnopqrstuvwxyzéßçøœæÄÖÜжщэ"


def _long_word(rng: random.Random) -> str:
  length = rng.choice([40, 60, 99, 100, 101, 150])
  return "".join(rng.choice(_LETTERS) for _ in range(length))


def _random_assigned_char(rng: random.Random) -> str:
  """A code point below U+3000 that Python's Unicode tables assign.

  Unassigned code points are left out: their classification depends on the
  Unicode version of each library (Python, RE2/ICU, Rust).
  """
  while True:
    char = chr(rng.randint(0x20, 0x2FFF))
    if unicodedata.category(char) != "Cn":
      return char


def varied_lines(count: int, seed: int = 0, random_chars: bool = True,
                 excluded: str = "") -> list[str]:
  """`count` lines mixing scripts, accents, cases, punctuation, controls.

  Args:
    count: the number of lines.
    seed: the random seed; the same arguments give the same lines.
    random_chars: mix in random assigned code points below U+3000.
    excluded: pieces containing any of these characters are left out.
  """
  rng = random.Random(seed)
  pieces = [piece for piece in _PIECES
            if not any(char in piece for char in excluded)]
  lines = []
  for _ in range(count):
    words = []
    for _ in range(rng.randint(1, 12)):
      roll = rng.random()
      if roll < 0.05:
        words.append(_long_word(rng))
      elif roll < 0.15 and random_chars:
        words.append(_random_assigned_char(rng))
      else:
        piece = rng.choice(pieces)
        words.append(piece.upper() if rng.random() < 0.1 else piece)
    separators = [rng.choice([" ", " ", " ", "", "  ", "\t"])
                  for _ in words]
    lines.append("".join(w + s for w, s in zip(words, separators)))
  return lines
