"""What a WordPiece vocabulary says about casing, and why text maps to [UNK].

A released model that ships no tokenizer settings leaves the casing to be
guessed; BERT's tokenizer lower-cases by default, which turns every word of
a cased vocabulary that has only upper-case letters (a protein model's
residues, say) into [UNK]. `infer_lower_case` reads the vocabulary
instead: a vocabulary whose letters are all upper case, or that holds both
cases of most letters, is cased; one whose letters are lower case is
uncased. `unknown_hint` names the likely cause when text maps to [UNK].
"""

import collections

# A vocabulary is called cased when it holds both cases of at least this
# share of the letters it has in lower case.
_BOTH_CASES_SHARE = 0.5


def _letters(tokens):
  """Counter of the letters of the vocabulary's word pieces (special tokens
  in brackets and the '##' continuation prefix left out)."""
  letters = collections.Counter()
  for token in tokens:
    if token.startswith("[") and token.endswith("]"):
      continue
    if token.startswith("##"):
      token = token[2:]
    for c in token:
      if c.isalpha() and c.lower() != c.upper():
        letters[c] += 1
  return letters


def infer_lower_case(tokens):
  """(do_lower_case, reason) from a vocabulary's tokens.

  Args:
    tokens: the vocabulary's tokens (any iterable of str).
  Returns:
    do_lower_case: False for a cased vocabulary, True otherwise (BERT's
      default also when the vocabulary has no cased letters at all).
    reason: a short sentence on what was counted.
  """
  letters = _letters(tokens)
  upper = {c for c in letters if c.isupper()}
  lower = {c for c in letters if c.islower()}
  if not upper and not lower:
    return True, "the vocabulary has no cased letters"
  if upper and not lower:
    return False, ("the vocabulary's %d letters are upper case only" %
                   len(upper))
  both = sum(1 for c in lower if c.upper() in upper)
  if both >= _BOTH_CASES_SHARE * len(lower):
    return False, ("the vocabulary holds both cases of %d of its %d "
                   "lower-case letters" % (both, len(lower)))
  return True, ("the vocabulary's letters are lower case (%d of %d have an "
                "upper-case form in it)" % (both, len(lower)))


def unknown_hint(tokens, do_lower_case, to_cased, to_uncased):
  """The likely cause of text that maps to [UNK], and its fix, as a phrase.

  Args:
    tokens: the vocabulary's tokens.
    do_lower_case: the casing in force.
    to_cased, to_uncased: how the user turns lower-casing off and on here
      (e.g. "build with --no-do-lower-case", 'set hparam "do_lower_case":
      true').
  """
  cased, reason = infer_lower_case(tokens)
  cased = not cased
  if cased and do_lower_case:
    return ("the text is lower-cased but the vocabulary is cased (%s): %s" %
            (reason, to_cased))
  if not cased and not do_lower_case:
    return ("the text keeps its case but the vocabulary is lower case (%s): "
            "%s" % (reason, to_uncased))
  return ("it was made for another language or domain: use the vocabulary "
          "the model was trained with, or learn one from this text with "
          "build_vocab.py")
