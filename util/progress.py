"""Progress-line helpers shared by every stage."""


def format_duration(seconds):
  seconds = int(max(0, seconds))
  h, rem = divmod(seconds, 3600)
  m, s = divmod(rem, 60)
  return "%dh%02dm%02ds" % (h, m, s) if h else "%dm%02ds" % (m, s)
