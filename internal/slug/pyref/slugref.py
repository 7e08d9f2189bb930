#!/usr/bin/python3
"""Reference slugs from the real python-slugify, for the tests of package slug.

Needs the Debian packages python3-slugify (4.0.0) and python3-text-unidecode (1.3), run with the
system interpreter (/usr/bin/python3). Everything it writes is deterministic.

    slugref.py corpus FILE   the multi-script corpus (names and python-slugify's slugs) as JSON
    slugref.py sweep FILE    every code point of the Basic Multilingual Plane between "a" and "b"
    slugref.py check FILE    check the slugs of a reference file (JSON list of name and slug)
    slugref.py slug NAME...  print the slug of each NAME

The slug is python-slugify's slugify() with its default options. python-slugify 4.0.0 passes the
name to text-unidecode as is; later releases, and the algorithm package slug implements, first
normalize it to NFKD. The transliteration step of the real slugify() is therefore given
NFKD followed by text-unidecode; every other step is python-slugify's own code.
"""

import json
import random
import sys
import types
import unicodedata

import slugify  # noqa: F401  (loads the slugify.slugify module)
import text_unidecode

_module = sys.modules["slugify.slugify"]
if slugify.__version__ != "4.0.0" or _module.unidecode is not text_unidecode:
    sys.exit("slugref: need python-slugify 4.0.0 with the text-unidecode backend, found %s with %s"
             % (slugify.__version__, _module.unidecode.__name__))
_module.unidecode = types.SimpleNamespace(
    unidecode=lambda text: text_unidecode.unidecode(unicodedata.normalize("NFKD", text)))


def reference_slug(name):
    """python-slugify's slug of name (default options, NFKD then text-unidecode)."""
    return _module.slugify(name)


def unknown_to_text_unidecode(ch):
    """Whether text-unidecode marks a character of ch's NFKD form as unknown ("[?]").

    python-slugify turns the mark into a separator, where the rule of package slug drops a
    character without a transliteration; names holding such characters stay out of the corpus.
    """
    return "[?]" in text_unidecode.unidecode(unicodedata.normalize("NFKD", ch))


def usable(cp):
    """Assigned in this interpreter's Unicode version, not a surrogate, and not unknown."""
    ch = chr(cp)
    return unicodedata.category(ch) not in ("Cn", "Cs", "Co") and not unknown_to_text_unidecode(ch)


def chars(*ranges):
    return [chr(cp) for lo, hi in ranges for cp in range(lo, hi + 1) if usable(cp)]


# The scripts of the corpus: a name, the code point ranges drawn from, and real words.
SCRIPTS = [
    ("latin", chars((0xC0, 0x24F), (0x1E00, 0x1EFF)),
     ["Crème brûlée", "Ærø", "Straße", "Łódź", "Škoda", "İstanbul", "Nguyễn Văn", "Curaçao",
      "São Paulo", "Zürich", "Ångström", "Dvořák", "Þórr", "Œuvre", "Fjörður", "Señor"]),
    ("greek", chars((0x370, 0x3FF), (0x1F00, 0x1FFF)),
     ["Ελλάδα", "Αθήνα", "Θεσσαλονίκη", "ΣΊΣΥΦΟΣ", "Ψυχή", "ἀρχή"]),
    ("cyrillic", chars((0x400, 0x52F)),
     ["Привет мир", "Москва", "Київ", "Європа", "Ђорђе", "Жёлтый щит", "Подъезд", "Беларусь"]),
    ("cjk", chars((0x4E00, 0x9FFF)),
     ["北京", "東京", "上海", "人工智能", "一号", "数据分析", "研究代理", "香港", "台北"]),
    ("hangul", chars((0xAC00, 0xD7A3), (0x1100, 0x11FF), (0x3130, 0x318F)),
     ["서울", "한국어", "에이전트", "부산", "안녕하세요"]),
    ("kana", chars((0x3040, 0x30FF), (0xFF65, 0xFF9F)),
     ["東京 タワー", "しんかんせん", "エージェント", "ちかてつ", "ツナミ", "サッカー", "ｶﾀｶﾅ"]),
    ("arabic", chars((0x600, 0x6FF)), ["مرحبا", "العربية", "القاهرة", "وكيل"]),
    ("hebrew", chars((0x590, 0x5FF)), ["עברית", "שלום", "ירושלים", "סוכן"]),
    ("devanagari", chars((0x900, 0x97F)), ["नमस्ते", "हिन्दी", "मुंबई", "एजेंट"]),
    ("thai", chars((0xE00, 0xE7F)), ["สวัสดี", "ภาษาไทย", "กรุงเทพ", "ตัวแทน"]),
    ("emoji", chars((0x2600, 0x27BF)) + [chr(cp) for cp in range(0x1F300, 0x1FAFF, 7)],
     ["Agent 😀 Smith", "🚀 Launch", "☀ Sun ☂", "✓ Done", "😀🚀"]),
    ("symbols", chars((0x2000, 0x206F), (0x20A0, 0x20CF), (0x2100, 0x218F), (0x2190, 0x22FF),
                      (0x2460, 0x24FF), (0x2500, 0x257F), (0xFF01, 0xFF5E), (0xA0, 0xBF)),
     ["€5 £5", "© ® ™", "3×4 20°C", "½ price", "a→b", "Ａｇｅｎｔ", "ﬁle", "x²", "Ⅻ", "‰ ∞ ≠"]),
    ("armenian", chars((0x531, 0x58A)), ["Հայաստան", "Երևան"]),
    ("georgian", chars((0x10A0, 0x10FF)), ["საქართველო", "თბილისი"]),
]

ASCII_WORDS = ["Agent", "AI", "Research", "bot", "2", "v1.2", "1,000", "Data", "X", "Team"]
SEPARATORS = [" ", "  ", "-", "_", " - ", "\t", "\u3000", "\u00a0", ", ", ".", "'", "''", "/",
              " & ", "&amp;", "&#39;", "&eacute;", " | ", "...", "\n", "·", "、", "。", "　"]


def word(rng, alphabet, lo=1, hi=8):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


def corpus():
    """The multi-script corpus: a deterministic list of names."""
    rng = random.Random(21)
    names = []
    by_script = {s: (alphabet, words) for s, alphabet, words in SCRIPTS}
    # Every character of the smaller scripts, eight at a time, and the real words.
    for script, alphabet, words in SCRIPTS:
        names.extend(words)
        if script not in ("cjk", "hangul"):
            names.extend("".join(alphabet[i:i + 8]) for i in range(0, len(alphabet), 8))
    # Random names of one script, with separators and ASCII words.
    for script, alphabet, words in SCRIPTS:
        for _ in range(120):
            parts = []
            for _ in range(rng.randint(1, 4)):
                r = rng.random()
                parts.append(rng.choice(words) if r < 0.2 else
                             rng.choice(ASCII_WORDS) if r < 0.35 else word(rng, alphabet))
            names.append(join(rng, parts))
    # Mixed scripts.
    scripts = [s for s, _, _ in SCRIPTS]
    for _ in range(300):
        parts = []
        for _ in range(rng.randint(2, 5)):
            alphabet, words = by_script[rng.choice(scripts)]
            parts.append(rng.choice(words) if rng.random() < 0.3 else word(rng, alphabet, 1, 4))
        names.append(join(rng, parts))
    # Whitespace and punctuation runs.
    punct = [c for c in " \t\n\r!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"] + SEPARATORS
    for _ in range(150):
        names.append("".join(rng.choice(punct) + (rng.choice(ASCII_WORDS) if rng.random() < 0.4 else "")
                             for _ in range(rng.randint(1, 12))))
    # Very long names.
    for _ in range(40):
        alphabet, words = by_script[rng.choice(scripts)]
        parts = [rng.choice(words) if rng.random() < 0.3 else word(rng, alphabet, 5, 40)
                 for _ in range(rng.randint(20, 60))]
        names.append(join(rng, parts))
    seen, unique = set(), []
    for n in names:
        if n not in seen:
            seen.add(n)
            unique.append(n)
    return unique


def join(rng, parts):
    out = parts[0]
    for p in parts[1:]:
        out += rng.choice(SEPARATORS) + p
    return out


def write_cases(path, cases):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("[\n")
        f.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in cases))
        f.write("\n]\n")


def main(argv):
    if len(argv) >= 2 and argv[0] == "corpus":
        write_cases(argv[1], [{"name": n, "slug": reference_slug(n)} for n in corpus()])
    elif len(argv) >= 2 and argv[0] == "sweep":
        cases = []
        for cp in range(0x80, 0x10000):
            if 0xD800 <= cp < 0xE000:
                continue
            name = "a" + chr(cp) + "b"
            cases.append({"name": name, "slug": reference_slug(name),
                          "unknown": unknown_to_text_unidecode(chr(cp)),
                          "assigned": unicodedata.category(chr(cp)) != "Cn"})
        write_cases(argv[1], cases)
    elif len(argv) >= 2 and argv[0] == "check":
        with open(argv[1], encoding="utf-8") as f:
            cases = json.load(f)
        stale = [c for c in cases if reference_slug(c["name"]) != c["slug"]]
        for c in stale[:20]:
            print("%s: %r has slug %r in python-slugify, %r in the file"
                  % (argv[1], c["name"], reference_slug(c["name"]), c["slug"]), file=sys.stderr)
        if stale:
            sys.exit("%s: %d of %d slugs differ from python-slugify" % (argv[1], len(stale), len(cases)))
        print("%s: %d slugs agree with python-slugify" % (argv[1], len(cases)))
    elif len(argv) >= 1 and argv[0] == "slug":
        for name in argv[1:]:
            print(reference_slug(name))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
