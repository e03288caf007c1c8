"""The grammar of MiniGPT's toy English: its word lists, its rules, and its 600-word vocabulary.

A sentence is a time adverb, one to three coordinated clauses, and a period:

    sentence  := ADVERB clause ( CONNECTOR clause ){0,2} "."
    clause    := subject verb-phrase
    subject   := PRONOUN | NAME | DETERMINER PERSON_NOUN(S)
    verb-phrase (past)    := PAST_FORM complement
    verb-phrase (present) := THIRD_SINGULAR complement   if the subject is 3rd person singular
                           | BASE complement             otherwise
    verb-phrase (future)  := "will" BASE complement
    complement := (nothing)                    after an intransitive verb   "worked"
                | FOOD_NOUN                    after a food verb            "cooked dinner"
                | DETERMINER MEDIA_NOUN        after a media verb           "watched the film"
                | DETERMINER THING_NOUN(S)     after a thing verb           "found my keys"
                | "to" DETERMINER PLACE_NOUN   after a motion verb          "went to the park"

The first adverb alone sets the tense, and every clause of the sentence uses it. Every word form
belongs to exactly one word class, so a deterministic left-to-right parser
(:func:`minigpt.corpus.is_grammatical`) decides membership exactly. Modules that generate and
check sentences live in :mod:`minigpt.corpus`; this module is data plus small helpers.
"""

from __future__ import annotations

from typing import Literal

from minigpt.runtime.tokenizer import PAD

Tense = Literal["past", "present", "future"]
Verb = tuple[str, str, str]  # (base, third_singular, past)

PERIOD = "."
WILL = "will"
TO = "to"
CONNECTORS: tuple[str, ...] = ("and", "but")
MAX_CLAUSES = 3
# fmt: off
# Word tables are kept compact: several entries a line.
RULES: tuple[str, ...] = (
    'sentence  := ADVERB clause ( CONNECTOR clause ){0,2} "."',
    "clause    := subject verb-phrase",
    "subject   := PRONOUN | NAME | DETERMINER PERSON_NOUN(S)",
    "verb-phrase (past)    := PAST_FORM complement",
    "verb-phrase (present) := THIRD_SINGULAR complement  if the subject is 3sg",
    "                       | BASE complement            otherwise",
    'verb-phrase (future)  := "will" BASE complement',
    'complement := (nothing)                   intransitive verb  "worked"',
    '            | FOOD_NOUN                   food verb          "cooked dinner"',
    '            | DETERMINER MEDIA_NOUN       media verb         "watched the film"',
    '            | DETERMINER THING_NOUN(S)    thing verb         "found my keys"',
    '            | "to" DETERMINER PLACE_NOUN  motion verb        "went to the park"',
)

# Time adverbs, each a tuple of tokens; the sentence's first adverb sets its tense.
PAST_ADVERBS: tuple[tuple[str, ...], ...] = (
    ("Yesterday",), ("Last", "night"), ("Last", "week"), ("Last", "year"), ("Last", "summer"),
)
PRESENT_ADVERBS: tuple[tuple[str, ...], ...] = (
    ("Every", "day"), ("Every", "morning"), ("Every", "week"), ("Usually",), ("Often",),
)
FUTURE_ADVERBS: tuple[tuple[str, ...], ...] = (
    ("Tomorrow",), ("Next", "week"), ("Next", "year"), ("Next", "summer"), ("Soon",),
)
ADVERBS_BY_TENSE: dict[Tense, tuple[tuple[str, ...], ...]] = {
    "past": PAST_ADVERBS, "present": PRESENT_ADVERBS, "future": FUTURE_ADVERBS,
}

# Pronoun -> (person, number). Only the 3rd person singular takes the -s form in the present.
PRONOUNS: dict[str, tuple[int, str]] = {
    "I": (1, "singular"), "you": (2, "singular"), "he": (3, "singular"), "she": (3, "singular"),
    "it": (3, "singular"), "we": (1, "plural"), "they": (3, "plural"),
}
DETERMINERS: tuple[str, ...] = ("the", "my", "your", "his", "her", "our", "their")

# (singular, plural) nouns for people; "the teacher" is 3rd singular, "my brothers" 3rd plural.
PERSON_NOUNS: tuple[tuple[str, str], ...] = tuple(
    (w, w + "s")
    for w in (
        "teacher", "brother", "sister", "friend", "neighbour", "doctor", "cousin", "student",
        "driver", "farmer", "baker", "nurse", "pilot", "singer", "uncle", "aunt",
    )
)

# Verbs as (base, third_singular, past), grouped by the complement they take.
INTRANSITIVE_VERBS: tuple[Verb, ...] = (
    ("work", "works", "worked"), ("play", "plays", "played"), ("sleep", "sleeps", "slept"),
    ("sing", "sings", "sang"), ("dance", "dances", "danced"), ("laugh", "laughs", "laughed"),
    ("smile", "smiles", "smiled"), ("cry", "cries", "cried"), ("swim", "swims", "swam"),
    ("rest", "rests", "rested"), ("wait", "waits", "waited"), ("study", "studies", "studied"),
    ("jump", "jumps", "jumped"), ("shout", "shouts", "shouted"), ("relax", "relaxes", "relaxed"),
    ("sit", "sits", "sat"), ("listen", "listens", "listened"), ("win", "wins", "won"),
    ("yawn", "yawns", "yawned"), ("whistle", "whistles", "whistled"),
)
FOOD_VERBS: tuple[Verb, ...] = (
    ("cook", "cooks", "cooked"), ("eat", "eats", "ate"), ("have", "has", "had"),
    ("order", "orders", "ordered"), ("prepare", "prepares", "prepared"),
    ("skip", "skips", "skipped"), ("share", "shares", "shared"), ("serve", "serves", "served"),
)
MEDIA_VERBS: tuple[Verb, ...] = (
    ("watch", "watches", "watched"), ("enjoy", "enjoys", "enjoyed"), ("miss", "misses", "missed"),
    ("record", "records", "recorded"), ("review", "reviews", "reviewed"),
    ("hate", "hates", "hated"),
)
THING_VERBS: tuple[Verb, ...] = (
    ("find", "finds", "found"), ("lose", "loses", "lost"), ("buy", "buys", "bought"),
    ("sell", "sells", "sold"), ("fix", "fixes", "fixed"), ("clean", "cleans", "cleaned"),
    ("paint", "paints", "painted"), ("open", "opens", "opened"), ("carry", "carries", "carried"),
    ("wash", "washes", "washed"), ("borrow", "borrows", "borrowed"), ("need", "needs", "needed"),
    ("want", "wants", "wanted"), ("like", "likes", "liked"), ("bring", "brings", "brought"),
    ("drop", "drops", "dropped"), ("break", "breaks", "broke"), ("hide", "hides", "hid"),
)
MOTION_VERBS: tuple[Verb, ...] = (
    ("go", "goes", "went"), ("walk", "walks", "walked"), ("drive", "drives", "drove"),
    ("run", "runs", "ran"), ("come", "comes", "came"), ("hurry", "hurries", "hurried"),
    ("cycle", "cycles", "cycled"), ("return", "returns", "returned"), ("ride", "rides", "rode"),
    ("travel", "travels", "travelled"),
)
VERBS_BY_KIND: dict[str, tuple[Verb, ...]] = {
    "intransitive": INTRANSITIVE_VERBS, "food": FOOD_VERBS, "media": MEDIA_VERBS,
    "thing": THING_VERBS, "motion": MOTION_VERBS,
}

# Objects and complements.
FOOD_NOUNS: tuple[str, ...] = (
    "breakfast", "lunch", "dinner", "soup", "rice", "bread", "pasta", "salad", "pizza", "cheese",
    "chicken", "cereal", "noodles", "pancakes",
)
MEDIA_NOUNS: tuple[str, ...] = (
    "film", "match", "show", "concert", "news", "game", "movie", "lecture", "opera", "cartoon",
    "debate", "parade",
)
THING_NOUNS: tuple[tuple[str, str], ...] = (
    ("book", "books"), ("car", "cars"), ("bike", "bikes"), ("box", "boxes"), ("door", "doors"),
    ("window", "windows"), ("table", "tables"), ("chair", "chairs"), ("bag", "bags"),
    ("letter", "letters"), ("lamp", "lamps"), ("phone", "phones"), ("key", "keys"),
    ("bottle", "bottles"), ("cup", "cups"), ("clock", "clocks"), ("umbrella", "umbrellas"),
    ("ticket", "tickets"), ("map", "maps"), ("camera", "cameras"), ("guitar", "guitars"),
    ("kite", "kites"), ("radio", "radios"), ("basket", "baskets"),
)
PLACE_NOUNS: tuple[str, ...] = (
    "park", "station", "beach", "market", "office", "library", "museum", "school", "garden",
    "cinema", "hospital", "airport", "river", "city", "village", "shop", "bank", "zoo", "church",
    "farm",
)

# Names are 3rd person singular subjects; the list's length tunes the vocabulary to exactly 600.
NAMES: tuple[str, ...] = tuple(
    """
Anna Ben Clara David Emma Frank Grace Henry Iris Jack Kate Leo Maria Noah Olivia Paul Rosa Sam
Tom Uma Victor Wendy Xavier Yara Zoe Adam Bella Carl Diana Ethan Fiona George Hannah Ivan Julia
Kevin Laura Mark Nina Oscar Peter Ruth Simon Tina Ursula Vera Walter Yusuf Zack Alice Bruno
Chloe Daniel Elena Felix Gina Hugo Isabel James Karen Liam Mia Nathan Omar Pia Quentin Rachel
Sofia Theo Ulrich Valerie William Xenia Yvonne Zara Aaron Beth Colin Dora Eric Flora Gavin
Helen Igor Jane Kyle Lucy Martin Nora Owen Priya Quinn Robert Sara Tobias Una Vince Wanda Yuki
Zeno Amir Bianca Cedric Daisy Edgar Freya Gordon Heidi Isaac Jasmine Karl Lena Miguel Nadia
Otto Paula Rita Stefan Tara Umar Viola Wesley Yann Zelda Alan Brenda Conor Delia Elias Fatima
Glen Harriet Ian Joan Keith Lily Max Nell Orla Pedro Rhea Scott Tess Uri Vivian Wayne Yasmin
Alma Boris Cathy Dennis Edith Fred Greta Harold Ines Joel Kira Luke Mona Nick Olga Piet Ralph
Selma Troy Ulla Vlad Wilma Yosef Zina Abel Bea Cyril Dinah Emil Fay Gus Hilda Ike Jon Kai Lola
Milo Neil Opal Pablo Raul Sid Trudy Ugo Vern Wade Yuri Zola Ada Bart Cleo Dean Eve Finn Gail
Hal Ida Jude Kim Lars Meg Ned Odin Pam Reza Suzy Ted Ulf Val Yana Zed Axel Bram Cora Dirk
Enzo Faye Gwen Hans Ivy Joy Kurt Lea Moe Nico Ola Pim Rex Sven Tilda Abe Bo Cal Dot Ed Flo
Amos Beryl Chad Dara Elsa Fritz Gil Hope Ilse Jens Kofi
""".split()
)
# fmt: on


def verb_kinds() -> dict[str, str]:
    """Map every verb form (base, third singular, past) to its complement kind, e.g. 'food'."""
    return {form: kind for kind, verbs in VERBS_BY_KIND.items() for verb in verbs for form in verb}


def all_verbs() -> tuple[Verb, ...]:
    """All verbs as (base, third_singular, past) tuples, in vocabulary order."""
    return tuple(verb for verbs in VERBS_BY_KIND.values() for verb in verbs)


def _word_groups() -> list[tuple[str, tuple[str, ...]]]:
    """(word class, words) pairs in vocabulary order; each word appears in exactly one class."""
    adverb_words = dict.fromkeys(w for adverbs in ADVERBS_BY_TENSE.values() for a in adverbs for w in a)
    verbs = all_verbs()
    return [
        ("padding", (PAD,)),
        ("period", (PERIOD,)),
        ("time adverb", tuple(adverb_words)),
        ("connector", CONNECTORS),
        ("future auxiliary", (WILL,)),
        ("preposition", (TO,)),
        ("pronoun", tuple(PRONOUNS)),
        ("determiner", DETERMINERS),
        ("person noun", tuple(sg for sg, _ in PERSON_NOUNS)),
        ("person noun plural", tuple(pl for _, pl in PERSON_NOUNS)),
        ("base verb", tuple(v[0] for v in verbs)),
        ("present verb 3sg", tuple(v[1] for v in verbs)),
        ("past verb", tuple(v[2] for v in verbs)),
        ("food noun", FOOD_NOUNS),
        ("media noun", MEDIA_NOUNS),
        ("thing noun", tuple(sg for sg, _ in THING_NOUNS)),
        ("thing noun plural", tuple(pl for _, pl in THING_NOUNS)),
        ("place noun", PLACE_NOUNS),
        ("name", NAMES),
    ]


_CLASS_OF: dict[str, str] = {w: cls for cls, words in _word_groups() for w in words}


def vocabulary() -> list[str]:
    """The model's vocabulary, V = 600: "<pad>" (id 0), "." (id 1), then every word by class."""
    return [w for _, words in _word_groups() for w in words]


def word_class(word: str) -> str:
    """The word class of a vocabulary word, e.g. 'past verb', 'present verb 3sg', 'pronoun'."""
    try:
        return _CLASS_OF[word]
    except KeyError:
        raise ValueError(
            f"word must be in the grammar's vocabulary, got {word!r}; see minigpt.corpus.grammar.vocabulary()"
        ) from None


def is_past_verb(word: str) -> bool:
    """True when word is a past-tense verb form ("worked", "went"); False for anything else."""
    return _CLASS_OF.get(word) == "past verb"


def is_present_3sg_verb(word: str) -> bool:
    """True when word is a present 3rd-person-singular verb form ("works", "has", "goes")."""
    return _CLASS_OF.get(word) == "present verb 3sg"


def is_base_verb(word: str) -> bool:
    """True when word is a verb's base form ("work"), used after "will" and in the plain present."""
    return _CLASS_OF.get(word) == "base verb"


def class_counts() -> dict[str, int]:
    """Number of vocabulary words in each word class, in vocabulary order."""
    return {cls: len(words) for cls, words in _word_groups()}


def rules() -> list[str]:
    """The grammar's production rules as readable lines (the book's chapter 5 prints them)."""
    return list(RULES)
