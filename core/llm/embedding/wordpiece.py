"""BERT's uncased WordPiece tokenizer in pure Python: the ids HF ``tokenizers`` gives, without it.

all-MiniLM-L6-v2 reads text as BERT does. Its ``tokenizer.json`` names four steps, each done here
exactly as ``tokenizers`` (0.23) does it:

1. Special tokens written in the text (``[CLS]``, ``[SEP]``, ...) are taken as they are, before anything
   else (case-sensitive; the text between them goes through the next steps).
2. ``BertNormalizer``: drop NUL, U+FFFD and control characters (categories C*, but tab, newline and
   carriage return), turn whitespace into spaces, put spaces around CJK ideographs, strip accents
   (NFD, then drop nonspacing marks) and lowercase, one character at a time.
3. ``BertPreTokenizer``: split on whitespace and around each punctuation character (categories P* and
   ASCII symbols such as ``$+<=>^`|~``).
4. ``WordPiece``: each word becomes its longest vocabulary prefix, then the longest ``##``-pieces of
   the rest; a word of more than 100 characters, or one with a part no piece matches, is ``[UNK]``.

The ids are then put between ``[CLS]`` and ``[SEP]``; nothing is truncated or padded.

Which characters are control, punctuation or nonspacing marks, and the lowercase of the few letters
Python's ``unicodedata`` does not know yet, are read from ``bert_unicode.json``: ``tokenizers`` takes
them from older (categories) and newer (lowercase) Unicode tables than Python's, and the file holds
its answers for every code point (written by ``python -m tests.cold.test_wordpiece``). Pulling in the
``tokenizers`` package only for this brought huggingface_hub and hf_xet with it (about 30 MB).
"""

from __future__ import annotations

import bisect
import json
import re
import unicodedata
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Sequence

WORD_CACHE = 1 << 16
"""Words whose ids are remembered: prose repeats its words, so most lookups are one dict access."""
WHITESPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
                       "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
"""Rust's ``char::is_whitespace`` (the Unicode White_Space property), which ``tokenizers`` splits on;
Python's ``str.isspace`` differs (it also takes U+001C-U+001F)."""
CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
              (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))
"""The code points BERT treats as CJK ideographs, each a word of its own."""


class WordPiece:
    """A BERT uncased WordPiece tokenizer read from a model folder; safe to share between threads."""

    def __init__(self, vocab: dict[str, int], *, unk_token: str = "[UNK]", prefix: str = "##",
                 max_word_chars: int = 100, cls_token: str = "[CLS]", sep_token: str = "[SEP]",
                 special_tokens: Iterable[str] = (), clean_text: bool = True, chinese_chars: bool = True,
                 strip_accents: bool = True, lowercase: bool = True) -> None:
        """A tokenizer over ``vocab`` (token → id) with the settings of ``tokenizer.json``.

        Args:
            special_tokens: tokens taken whole where the raw text holds them (``added_tokens``).
            strip_accents: ``tokenizers`` takes ``lowercase`` for it where the file says null.

        Raises:
            ValueError: a special token or the unknown token is not in ``vocab``.
        """
        missing = [t for t in (unk_token, cls_token, sep_token, *special_tokens) if t not in vocab]
        if missing:
            raise ValueError(f"the vocabulary has no {', '.join(missing)}")
        self.vocab = vocab
        self.unk_id, self.cls_id, self.sep_id = vocab[unk_token], vocab[cls_token], vocab[sep_token]
        self.prefix = prefix
        self.max_word_chars = max_word_chars
        self.longest = max(map(len, vocab))
        self.specials = {t: vocab[t] for t in special_tokens}
        # Longest first, so that of two specials starting at one place the longer wins (as in tokenizers).
        self.special_pattern = re.compile("(" + "|".join(
            map(re.escape, sorted(self.specials, key=len, reverse=True))) + ")") if self.specials else None
        self.clean_text, self.chinese_chars = clean_text, chinese_chars
        self.strip_accents, self.lowercase = strip_accents, lowercase
        self.char_table = _CharTable(clean_text, chinese_chars)
        self.word_ids = lru_cache(maxsize=WORD_CACHE)(self._word_ids)

    @classmethod
    def from_model_dir(cls, path: Path) -> "WordPiece":
        """The tokenizer of the model in folder ``path``: settings from ``tokenizer.json``, the vocabulary
        from it too or else from ``vocab.txt``.

        Raises:
            OSError: the files (or this package's ``bert_unicode.json``) cannot be read.
            ValueError: the files are damaged or describe a tokenizer other than BERT's WordPiece.
        """
        _tables()  # read now: a missing or damaged bert_unicode.json fails here, not in the first encode
        config = json.loads((path / "tokenizer.json").read_text(encoding="utf-8"))
        model = _expect(config, "model", "WordPiece")
        vocab = model.get("vocab") or read_vocab_txt(path / "vocab.txt")
        normalizer = _expect(config, "normalizer", "BertNormalizer")
        _expect(config, "pre_tokenizer", "BertPreTokenizer")
        cls_token, sep_token = _cls_sep(config.get("post_processor") or {})
        strip = normalizer.get("strip_accents")
        return cls(vocab, unk_token=model.get("unk_token", "[UNK]"),
                   prefix=model.get("continuing_subword_prefix", "##"),
                   max_word_chars=model.get("max_input_chars_per_word", 100),
                   cls_token=cls_token, sep_token=sep_token, special_tokens=_special_tokens(config),
                   clean_text=normalizer.get("clean_text", True),
                   chinese_chars=normalizer.get("handle_chinese_chars", True),
                   lowercase=normalizer.get("lowercase", True),
                   strip_accents=normalizer.get("lowercase", True) if strip is None else strip)

    def encode(self, text: str) -> list[int]:
        """The ids of ``text`` between ``[CLS]`` and ``[SEP]``, neither truncated nor padded."""
        ids = [self.cls_id]
        parts = self.special_pattern.split(text) if self.special_pattern and "[" in text else [text]
        for number, part in enumerate(parts):
            if number % 2:  # re.split puts the matched special tokens at odd places
                ids.append(self.specials[part])
            elif part:
                for word in self.words(part):
                    ids.extend(self.word_ids(word))
        ids.append(self.sep_id)
        return ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """The ids of each of ``texts`` (see :meth:`encode`)."""
        return [self.encode(text) for text in texts]

    def normalize(self, text: str) -> str:
        """``text`` after BertNormalizer: cleaned, CJK spaced, accents stripped, lowercased."""
        if self.clean_text or self.chinese_chars:
            text = text.translate(self.char_table)
        if self.strip_accents and not text.isascii():
            text = unicodedata.normalize("NFD", text).translate(_NONSPACING_MARKS)
        if self.lowercase:
            # tokenizers lowercases one character at a time: no final sigma (Python's lower() has it).
            text = text.lower() if text.isascii() else text.translate(_tables().lowercase).lower()
        return text

    def words(self, text: str) -> list[str]:
        """The words of ``text`` after normalizing it: split on whitespace, each punctuation mark alone."""
        words: list[str] = []
        for chunk in self.normalize(text).split():
            if chunk.isalnum():  # letters and digits only: no punctuation to split on
                words.append(chunk)
            else:
                words.extend(_split_punctuation(chunk))
        return words

    def _word_ids(self, word: str) -> tuple[int, ...]:
        """The WordPiece ids of one ``word``: longest pieces first, ``[UNK]`` if any part matches none."""
        if len(word) > self.max_word_chars:
            return (self.unk_id,)
        ids: list[int] = []
        start, vocab = 0, self.vocab
        while start < len(word):
            prefix = self.prefix if start else ""
            for end in range(min(len(word), start + self.longest), start, -1):
                found = vocab.get(prefix + word[start:end])
                if found is not None:
                    ids.append(found)
                    start = end
                    break
            else:
                return (self.unk_id,)
        return tuple(ids)


def read_vocab_txt(path: Path) -> dict[str, int]:
    """BERT's ``vocab.txt``: one token a line, its id the line's number from 0."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return {token: number for number, token in enumerate(lines)}


class _CharTable(dict):
    """``str.translate`` table of BertNormalizer's first steps, filled one character at a time as met."""

    def __init__(self, clean_text: bool, chinese_chars: bool) -> None:
        super().__init__()
        self.clean_text, self.chinese_chars = clean_text, chinese_chars

    def __missing__(self, code: int) -> int | str | None:
        char = chr(code)
        value: int | str | None = code
        if self.clean_text and _is_control(char):
            value = None
        elif self.clean_text and char in WHITESPACE:
            value = " "
        elif self.chinese_chars and any(low <= code <= high for low, high in CJK_RANGES):
            value = f" {char} "
        self[code] = value
        return value


class _MarkTable(dict):
    """``str.translate`` table dropping nonspacing marks (category Mn)."""

    def __missing__(self, code: int) -> int | None:
        value = None if _in(_tables().marks, code) else code
        self[code] = value
        return value


_NONSPACING_MARKS = _MarkTable()


class _Tables:
    """``bert_unicode.json``: tokenizers' answers where Python's Unicode tables differ from its own."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.removed = _starts_ends(data["removed"])
        """Dropped by clean_text: NUL, U+FFFD, controls (Cc, Cf, Co, Cs; not Cn) but tab, newline, return."""
        self.punctuation = _starts_ends(data["punctuation"])
        """Split around by BertPreTokenizer: ASCII punctuation and categories P*."""
        self.marks = _starts_ends(data["nonspacing_marks"])
        """Dropped after NFD when accents are stripped: category Mn."""
        self.lowercase = {0x3A3: "σ", **{int(code, 16): lower for code, lower in data["lowercase"].items()}}
        """``str.translate`` table applied before ``str.lower``: capital sigma (no final form in tokenizers)
        and the letters whose lowercase Python's tables lack."""


@cache
def _tables() -> _Tables:
    text = resources.files(__package__).joinpath("bert_unicode.json").read_text(encoding="utf-8")
    try:
        return _Tables(json.loads(text))
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"core/llm/embedding/bert_unicode.json is damaged ({exc!r}); reinstall "
                         "agentos") from exc


def _starts_ends(ranges: list[list[int]]) -> tuple[list[int], list[int]]:
    return [low for low, _ in ranges], [high for _, high in ranges]


def _in(table: tuple[list[int], list[int]], code: int) -> bool:
    """Whether ``code`` is in one of ``table``'s sorted, inclusive ranges."""
    starts, ends = table
    at = bisect.bisect_right(starts, code) - 1
    return at >= 0 and code <= ends[at]


def _is_control(char: str) -> bool:
    """tokenizers' ``is_control`` (NUL and U+FFFD included): clean_text drops these characters."""
    return _in(_tables().removed, ord(char))


@lru_cache(maxsize=4096)
def _is_punctuation(char: str) -> bool:
    """tokenizers' ``is_bert_punc``: ASCII punctuation or a Unicode P* category."""
    return _in(_tables().punctuation, ord(char))


def _split_punctuation(chunk: str) -> list[str]:
    """``chunk`` (no whitespace) cut around each punctuation character, which is a word of its own."""
    words: list[str] = []
    start = 0
    for index, char in enumerate(chunk):
        if _is_punctuation(char):
            if start < index:
                words.append(chunk[start:index])
            words.append(char)
            start = index + 1
    if start < len(chunk):
        words.append(chunk[start:])
    return words


def _expect(config: dict[str, Any], part: str, kind: str) -> dict[str, Any]:
    value = config.get(part) or {}
    if value.get("type") != kind:
        raise ValueError(f"tokenizer.json's {part} is {value.get('type')!r}, not {kind!r}")
    return value


def _cls_sep(processor: dict[str, Any]) -> tuple[str, str]:
    """The tokens put before and after a single text by ``post_processor``."""
    if processor.get("type") == "BertProcessing":
        return processor["cls"][0], processor["sep"][0]
    if processor.get("type") == "TemplateProcessing":
        single = processor.get("single") or []
        kinds = [next(iter(step)) for step in single]
        if kinds == ["SpecialToken", "Sequence", "SpecialToken"]:
            return single[0]["SpecialToken"]["id"], single[2]["SpecialToken"]["id"]
    raise ValueError("tokenizer.json's post_processor does not put a text between two special tokens: "
                     f"{processor.get('type')!r}")


def _special_tokens(config: dict[str, Any]) -> list[str]:
    """The ``added_tokens`` matched whole in the raw text; other kinds of added token are refused."""
    tokens = config.get("added_tokens") or []
    odd = [t["content"] for t in tokens
           if t.get("normalized") or t.get("single_word") or t.get("lstrip") or t.get("rstrip")]
    if odd:
        raise ValueError(f"tokenizer.json's added tokens {odd} are matched in ways not supported here")
    return [t["content"] for t in tokens]
