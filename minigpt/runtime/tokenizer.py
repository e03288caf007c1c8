"""Word-level tokenizer: maps the grammar's words to ids 0..V-1 and back.

One token per space-separated word, case-sensitive; the only special token is "<pad>" (id 0).
There is no BOS/EOS: sentences end with the token "." and training streams are sentences
joined by spaces. The book's vocabulary is :func:`minigpt.corpus.grammar.vocabulary` (V = 600):
``Tokenizer(grammar.vocabulary())``; a checkpoint stores its own (`from_dict`).
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Sequence
from typing import Any

PAD = "<pad>"  # the only special token, id 0


class Tokenizer:
    """A fixed word <-> id table; `encode` splits on whitespace, `decode` joins with single spaces."""

    def __init__(self, vocab: Sequence[str]) -> None:
        vocab = list(vocab)
        if not vocab or vocab[0] != PAD:
            first = vocab[0] if vocab else None
            raise ValueError(f"vocab must start with {PAD!r} at id 0, got {first!r} at id 0")
        bad = [w for w in vocab if not isinstance(w, str) or not w or any(c.isspace() for c in w)]
        if bad:
            raise ValueError(f"vocab words must be non-empty strings without whitespace, got {bad[:5]!r}")
        duplicates = sorted(w for w, count in Counter(vocab).items() if count > 1)
        if duplicates:
            raise ValueError(f"vocab words must be unique, got duplicates {duplicates[:5]!r}")
        self._words: tuple[str, ...] = tuple(vocab)
        self._ids: dict[str, int] = {w: i for i, w in enumerate(vocab)}

    @property
    def V(self) -> int:
        """Vocabulary size V (the model's embedding and LM-head rows)."""
        return len(self._words)

    @property
    def pad_id(self) -> int:
        """Id of "<pad>", always 0."""
        return 0

    @property
    def vocab(self) -> list[str]:
        """The words in id order (a copy)."""
        return list(self._words)

    def id_of(self, word: str) -> int:
        """The id of one vocabulary word; raises ValueError naming the word if it is unknown."""
        try:
            return self._ids[word]
        except KeyError:
            raise ValueError(self._unknown_message([word])) from None

    def encode(self, text: str) -> list[int]:
        """Ids of the whitespace-separated words of text ("" gives []); unknown words raise ValueError."""
        if not isinstance(text, str):
            raise ValueError(f"text must be a str, got {type(text).__name__}")
        words = text.split()
        unknown = list(dict.fromkeys(w for w in words if w not in self._ids))
        if unknown:
            raise ValueError(self._unknown_message(unknown))
        return [self._ids[w] for w in words]

    def decode(self, ids: Sequence[int]) -> str:
        """The words of ids joined by single spaces; ids outside 0..V-1 raise ValueError."""
        words = []
        for position, i in enumerate(ids):
            try:
                index = operator.index(i)
            except TypeError:
                index = -1
            if not 0 <= index < self.V:
                raise ValueError(
                    f"id {i!r} at position {position} is out of range; allowed ids are 0..{self.V - 1}"
                )
            words.append(self._words[index])
        return " ".join(words)

    def nearest(self, word: str, n: int = 3) -> list[str]:
        """The n vocabulary words nearest to `word`: edit distance ignoring case, then with case, then id.

        "<pad>" is never suggested. `minigpt/web/minigpt_forward.js` (`Tokenizer.nearest`) does the same.
        """
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        low = word.lower()
        ranked = sorted(
            (_edit_distance(low, w.lower()), _edit_distance(word, w), i) for i, w in enumerate(self._words) if i
        )
        return [self._words[i] for _, _, i in ranked[:n]]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description, {"kind": "word", "vocab": [...]}, for checkpoints."""
        return {"kind": "word", "vocab": list(self._words)}

    @classmethod
    def from_dict(cls, data: Any) -> Tokenizer:
        """Rebuild a tokenizer from `to_dict` output; malformed data raises ValueError."""
        if not isinstance(data, dict):
            kind = type(data).__name__
            raise ValueError(f"tokenizer data must be a dict with 'kind' and 'vocab', got {kind}")
        if data.get("kind") != "word":
            raise ValueError(f"tokenizer data 'kind' must be 'word', got {data.get('kind')!r}")
        vocab = data.get("vocab")
        if not isinstance(vocab, list) or not all(isinstance(w, str) for w in vocab):
            raise ValueError("tokenizer data 'vocab' must be a list of strings")
        return cls(vocab)

    def __len__(self) -> int:
        return self.V

    def __repr__(self) -> str:
        return f"Tokenizer(V={self.V})"

    def _unknown_message(self, unknown: list[str]) -> str:
        nearest = "; ".join(f"{w!r}: {', '.join(self.nearest(w))}" for w in unknown[:5])
        return (
            f"unknown words {unknown!r} — the vocabulary has {self.V} words (case-sensitive, '.' is a word of "
            f"its own); nearest: {nearest}; see minigpt.corpus.grammar.vocabulary()"
        )


def _edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: the fewest single-character insertions, deletions and substitutions from a to b."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]
