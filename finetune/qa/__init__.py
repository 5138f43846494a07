"""SQuAD 1.1 / 2.0 question answering."""
