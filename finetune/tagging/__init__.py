"""Sequence tagging: chunking, part of speech, named entities."""
