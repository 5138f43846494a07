"""BERT's text normalization and word splitting (text/bert_text.py)."""

from text import bert_text


def test_case_and_accent_options():
  lower_only = bert_text.BertNormalizer(do_lower_case=True,
                                        strip_accents=False)
  assert lower_only.normalize("Caf\u00e9 \u00c0B") == "caf\u00e9 \u00e0b"
  strip_only = bert_text.BertNormalizer(do_lower_case=False,
                                        strip_accents=True)
  assert strip_only.normalize("Caf\u00e9 \u00c0B") == "Cafe AB"
  default = bert_text.BertNormalizer()
  assert default.normalize("Caf\u00e9\x00 \u00c0B\u2003x") == "cafe ab x"


def test_control_characters_are_deleted_and_spaces_unified():
  normalizer = bert_text.BertNormalizer(do_lower_case=False)
  assert normalizer.normalize("a\x01b\tc\u200bd\ufffde\u00a0f") == (
      "ab\tcde f")
  # Cased, accents are kept too (strip_accents follows do_lower_case).
  assert normalizer.normalize_batch(["A\x7fB", "\u00c9t\u00e9"]) == [
      "AB", "\u00c9t\u00e9"]


def test_words_split_at_punctuation_and_cjk():
  assert bert_text.bert_words("don't stop-now!! \u4e2d\u6587ok") == [
      "don", "'", "t", "stop", "-", "now", "!", "!", "\u4e2d", "\u6587",
      "ok"]
  assert bert_text.bert_words("  ") == []
  # ASCII symbols between words are punctuation for BERT even where Unicode
  # calls them symbols ($, ^, `).
  assert bert_text.bert_words("a$b^c`d") == ["a", "$", "b", "^", "c", "`",
                                               "d"]
