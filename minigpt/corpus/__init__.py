"""The grammar corpus: `grammar` (the word lists and rules), `sentences` (the seeded generator and
the checker), `train` (the CLI that reproduces the shipped checkpoint), `quality` (model quality).

``from minigpt.corpus import generate_sentences, is_grammatical`` is what chapters import.
"""

from minigpt.corpus.sentences import (
    CorpusStats,
    corpus_stats,
    describe,
    generate_sentence,
    generate_sentences,
    is_grammatical,
    is_valid_prefix,
    next_words,
    split_sentences,
    tense_of,
    training_stream,
)

__all__ = [
    "CorpusStats", "corpus_stats", "describe", "generate_sentence", "generate_sentences", "is_grammatical",
    "is_valid_prefix", "next_words", "split_sentences", "tense_of", "training_stream",
]
