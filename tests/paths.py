"""Where the repository and the test fixtures are, for tests at any depth."""

import os

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
METHOD_DOC = os.path.join(REPO, "docs", "method.md")


def method_section(number):
  """Section `number` of docs/method.md, from its "## N." heading to the
  next one, with line breaks and the blockquote marks of its boxes taken
  out (so that a phrase can be looked for wherever its lines break)."""
  with open(METHOD_DOC) as f:
    text = f.read()
  start = text.index("\n## %d. " % number)
  end = text.find("\n## ", start + 1)
  section = text[start:end if end >= 0 else len(text)]
  return " ".join(line.lstrip("> ").strip() for line in section.split("\n"))
