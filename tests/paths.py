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


# The user's guide: the README and the docs/ pages it links to, in the
# workflow's order. tests/test_readme_commands.py runs every command they
# show; tests/test_doc_locations.py checks what they name and link.
GUIDE_PAGES = ("README.md",) + tuple(
    os.path.join("docs", name) for name in (
        "pretraining.md", "sentencepiece.md", "continuing.md",
        "finetuning.md", "export_and_serving.md", "distributed.md",
        "studies.md", "faults.md", "performance.md", "layout.md"))
# The one page of the guide with dates and machine names: the log of every
# measurement. The other pages quote its numbers without them.
DATED_LOG = os.path.join("docs", "performance.md")
# The other docs/ pages: the method (no commands), and the studies' reports,
# written by study.py (their provenance names the hours-long command that
# wrote them).
METHOD_PAGE = os.path.join("docs", "method.md")
REPORT_PATTERN = os.path.join("docs", "RESULTS*.md")
