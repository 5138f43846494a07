"""Records of a sentence task's data file (TSV, CSV or JSONL) per task.json.

A bad file is a UserError naming the file and line, the column or key, and
the nearest valid name where there is one.
"""

from finetune import readers
from finetune import task_spec
from util.errors import UserError


def _column(spec, columns, name, path, key):
  if name not in columns:
    raise UserError("%s:1: the header has no column %r (named by key %r of "
                    "%s)%s; the columns are: %s." % (
                        path, name, key, spec.path,
                        task_spec.nearest(name, columns),
                        ", ".join(repr(c) for c in columns)))
  if columns.count(name) > 1:
    raise UserError("%s:1: the header has two columns %r." % (path, name))
  return columns.index(name)


def read_records(spec, path, labelled):
  """[task_spec.Record] of a TSV, CSV or JSONL file of a task.json `spec`.

  Args:
    spec: the task.json's `task_spec.TaskSpec` (format, text and label
      columns, its path).
    path: the split's file.
    labelled: whether the label column is required (not in a test file).
  """
  if spec.format == "jsonl":
    return _jsonl_records(spec, path, labelled)
  if spec.format == "csv":
    columns, rows = readers.read_csv(path)
  else:
    # read_tsv decodes in blocks: check first, for the exact bad line.
    readers.check_utf8(path)
    columns, rows = readers.read_tsv(path, has_header=True)
  text_indices = [_column(spec, columns, name, path, "text_columns")
                  for name in spec.text_columns]
  label_index = None
  if labelled or spec.label_column in columns:
    label_index = _column(spec, columns, spec.label_column, path,
                          "label_column")
  records = []
  for row in rows:
    if len(row.fields) != len(columns):
      raise UserError("%s:%d: %d tab-separated fields, but the header "
                      "(line 1) has %d (%s)." % (
                          path, row.line, len(row.fields), len(columns),
                          ", ".join(repr(c) for c in columns)))
    records.append(task_spec.Record(
        [row.fields[i] for i in text_indices],
        row.fields[label_index] if label_index is not None else None,
        path, row.line))
  return records


def _jsonl_records(spec, path, labelled):
  records = []
  for record in readers.read_jsonl(path):
    obj = record.value

    def get(key, name, required=True):
      if name not in obj:
        if not required:
          return None
        raise UserError("%s:%d: the object has no key %r (named by key %r "
                        "of %s)%s; it has: %s." % (
                            path, record.line, name, key, spec.path,
                            task_spec.nearest(name, obj),
                            ", ".join(repr(k) for k in obj)))
      return obj[name]

    texts = []
    for name in spec.text_columns:
      value = get("text_columns", name)
      if isinstance(value, bool) or not isinstance(value,
                                                   (str, int, float)):
        raise UserError("%s:%d: key %r must hold a text (a string), got "
                        "%s." % (path, record.line, name,
                                 task_spec.json_text(value)))
      texts.append(str(value))
    label = get("label_column", spec.label_column, required=labelled)
    if label is not None and not isinstance(label, (str, int, float)):
      raise UserError("%s:%d: key %r must hold a label (a string or a "
                      "number), got %s." % (path, record.line,
                                            spec.label_column,
                                            task_spec.json_text(label)))
    records.append(task_spec.Record(texts, label, path, record.line))
  return records
