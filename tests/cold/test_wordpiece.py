"""The pure-Python WordPiece tokenizer gives HF tokenizers' ids for all-MiniLM-L6-v2, on any text.

HF ``tokenizers`` is the reference here and a test dependency only. Running this module writes
``core/llm/embedding/bert_unicode.json`` from it: ``python -m tests.cold.test_wordpiece``.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, normalizers, pre_tokenizers

from core.llm.embedding.minilm_onnx import model_dir
from core.llm.embedding.wordpiece import WordPiece, read_vocab_txt

pytestmark = pytest.mark.slow  # the model's tokenizer, code point by code point against HF tokenizers

ROOT = Path(__file__).resolve().parents[2]
TABLES_FILE = ROOT / "core" / "llm" / "embedding" / "bert_unicode.json"
CODE_POINTS = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
TEXTS = [
    "", " ", "hi", "The user prefers to be paid in euros, not dollars.",
    "Hello, World! How's it going?? (fine) [ok] {yes} <no> a/b\\c 'q' \"dq\" `tick` ~tilde^ |pipe| _under_",
    "!!!...,,,;;;:::---___+++===***&&&%%%$$$###@@@",
    "see https://example.com/path/to?q=1&r=two#frag and http://x.y:8080/",
    "mail ada.lovelace+tag@example.co.uk or bob@host",
    "def f(x: int) -> dict[str, int]:\n\treturn {'a': x ** 2, \"b\": [1, 2, 3]}  # comment",
    "3.14159 1,000,000 -42 +7 1e-9 0x1F 12:30 2024-05-09 45%",
    "café naïve Ångström résumé Ünïcödé façade coöperate São Paulo Dvořák Łódź",
    "Straße STRASSE groß Maß", "İstanbul ıi İI Iı", "ΣΊΣΥΦΟΣ ὈΔΥΣΣΕΎΣ σς Σ",
    "東京は日本の首都です。中文字符和标点，还有“引号”。", "ひらがな カタカナ ｶﾀｶﾅ 〜ー",
    "한국어 텍스트입니다. 안녕하세요!", "emoji 🎉🚀👍🏽 👨‍👩‍👧 ❤️ flags 🇵🇹",
    "zero\u200bwidth\u200cjoin\u200dchars\ufeffbom\u2060wj", "ctrl\x00\x01\x07\x1b[0m\x7f\x85end\ufffd",
    "tabs\tand\nnew\r\nlines\x0b\x0cfeeds\u2028\u2029sep\xa0nbsp\u3000ideo",
    "a" * 100, "b" * 101, "x" + "é" * 120, "supercalifragilisticexpialidocious" * 4,
    "antidisestablishmentarianism unbelievably tokenization",
    "hello [SEP] world [CLS][UNK]x [MASK] [mask] [PAD] [[SEP]] [SE P]",
    "Ünïcödé café in 東京 🎉 — naïve résumé", "¿Qué dijo Ada de Lisboa? «Bien» — dijo.",
    "ﬁ ﬂ Ⅻ ① ² ½ ＡＢＣ ｆｕｌｌ", "Ａ\u0301 e\u0301 \u0301alone n\u0303", "ǅ ǈ ᾈ ﬀ",
    "\U0001D400\U0001D41A \U00020000\U0002A6D6 \uF900\uFA6D", "عربي עברית हिन्दी ไทย",
]


@pytest.fixture(scope="module")
def reference() -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


@pytest.fixture(scope="module")
def wordpiece() -> WordPiece:
    return WordPiece.from_model_dir(model_dir())


def unicode_tables() -> dict:
    """What ``bert_unicode.json`` holds: tokenizers' view of every code point."""
    clean = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False,
                                       lowercase=False)
    strip = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True,
                                       lowercase=False)
    lower = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=False,
                                       lowercase=True)
    split = pre_tokenizers.BertPreTokenizer()
    chars = [chr(c) for c in CODE_POINTS]
    lowercase = {}
    for char in chars:
        if char != "Σ" and (low := lower.normalize_str(char)) != char.lower():
            lowercase[f"{ord(char):04X}"] = low
    return {
        "source": "HF tokenizers' BertNormalizer and BertPreTokenizer; python -m tests.cold.test_wordpiece",
        "removed": ranges(c for c in chars if clean.normalize_str(c) == ""),
        "punctuation": ranges(c for c in chars if len(split.pre_tokenize_str(f"a{c}a")) == 3),
        "nonspacing_marks": ranges(c for c in chars if strip.normalize_str(c) == ""),
        "lowercase": lowercase,
    }


def ranges(chars) -> list[list[int]]:
    out: list[list[int]] = []
    for code in map(ord, chars):
        if out and out[-1][1] == code - 1:
            out[-1][1] = code
        else:
            out.append([code, code])
    return out


def test_varied_texts_get_the_ids_of_hf_tokenizers(reference, wordpiece):
    """Prose, punctuation, URLs, code, numbers, accents, ß, İ, Σ, CJK, kana, Hangul, emoji, zero-width and
    control characters, whitespace of all kinds, words past 100 characters, special tokens, the empty text."""
    for text in TEXTS:
        assert wordpiece.encode(text) == reference.encode(text).ids, text
    assert wordpiece.encode_batch(TEXTS) == [e.ids for e in reference.encode_batch(TEXTS)]


@settings(max_examples=1500, deadline=None)
@given(st.text())
def test_random_unicode_text_gets_the_ids_of_hf_tokenizers(reference, wordpiece, text):
    assert wordpiece.encode(text) == reference.encode(text).ids


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from([*"aéΣßİ東한🎉.,-'#[]\u0301\u200b\x00 \t\n", "[SEP]", "[CLS]", "ing", "##"]))
       .map("".join))
def test_texts_of_tricky_pieces_get_the_ids_of_hf_tokenizers(reference, wordpiece, text):
    """Marks after letters, sigma at a word's end, specials glued to words: what random text rarely meets."""
    assert wordpiece.encode(text) == reference.encode(text).ids


def test_every_code_point_between_letters_gets_the_ids_of_hf_tokenizers(reference, wordpiece):
    """Each character inside a word and alone: categories, NFD, lowercase, CJK agree on the whole range
    (512 characters a text, so that the check takes seconds; a failure names the text's first one)."""
    texts = [" ".join(f"a{chr(c)}b {chr(c)}" for c in CODE_POINTS[start:start + 512])
             for start in range(0, len(CODE_POINTS), 512)]
    expected = [e.ids for e in reference.encode_batch(texts)]
    wrong = [hex(ord(t[1])) for t, ids,
             want in zip(texts, wordpiece.encode_batch(texts), expected) if ids != want]
    assert wrong == []


def test_the_shipped_unicode_tables_are_those_of_hf_tokenizers():
    assert json.loads(TABLES_FILE.read_text(encoding="utf-8")) == unicode_tables(), \
        "run: python -m tests.cold.test_wordpiece"


def test_vocab_txt_and_tokenizer_json_hold_the_same_vocabulary():
    vocab = json.loads((model_dir() / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
    assert read_vocab_txt(model_dir() / "vocab.txt") == vocab


def test_a_long_text_is_tokenized_fast(wordpiece):
    """30,000 characters of prose in well under 50 ms of CPU, cold word cache included (the thread's own CPU
    time, so other processes on the machine do not count; the best of three fresh tokenizers with the garbage
    collector paused, so a collection of what other tests left in the worker does not count either)."""
    words = "the billing service timed out after 45 seconds; we added a retry with backoff, café 東京".split()
    text = " ".join(words[(n * 7) % len(words)] + str(n % 97) for n in range(4000))[:30_000]
    spent = []
    for _ in range(3):
        fresh = WordPiece.from_model_dir(model_dir())
        gc.collect()
        gc.disable()
        try:
            started = time.thread_time()
            fresh.encode(text)
            spent.append(time.thread_time() - started)
        finally:
            gc.enable()
    assert min(spent) < 0.05, spent


if __name__ == "__main__":
    TABLES_FILE.write_text(json.dumps(unicode_tables(), ensure_ascii=False, separators=(",", ":")) + "\n",
                           encoding="utf-8")
    print(f"wrote {TABLES_FILE.relative_to(ROOT)}")
