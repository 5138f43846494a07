"""Text and vocabularies: BERT's normalization and word splitting
(`bert_text.py`), the WordPiece and SentencePiece tokenizers
(`tokenization.py`), a vocabulary's fingerprint (`vocab_fingerprint.py`)
and the data layout's rule of one vocabulary per directory
(`vocab_layout.py`)."""
