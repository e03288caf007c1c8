"""The grammar corpus: `grammar` (the word lists and rules), `sentences` (the seeded generator),
`checker` (the exact parser), `stats` (summaries), `train` (the CLI that reproduces the shipped
checkpoint), `quality` (model quality).

``from minigpt.corpus import generate_sentences, is_grammatical`` is what chapters import.
"""

from minigpt.corpus.checker import is_grammatical, is_valid_prefix, next_words, tense_of
from minigpt.corpus.sentences import generate_sentence, generate_sentences, split_sentences, training_stream
from minigpt.corpus.stats import CorpusStats, corpus_stats, describe

__all__ = [
    "CorpusStats", "corpus_stats", "describe", "generate_sentence", "generate_sentences", "is_grammatical",
    "is_valid_prefix", "next_words", "split_sentences", "tense_of", "training_stream",
]
