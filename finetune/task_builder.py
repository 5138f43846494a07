"""The registry of fine-tuning tasks: task name -> `Task` subclass."""

from finetune.classification import classification_tasks
from finetune.qa import qa_tasks
from finetune.tagging import tagging_tasks
from util.errors import UserError

TASKS = {}


def register(task_class):
  """Adds a `Task` subclass under its `name` (usable as a class decorator)."""
  if task_class.name in TASKS and TASKS[task_class.name] is not task_class:
    raise ValueError("task name %r registered twice" % task_class.name)
  TASKS[task_class.name] = task_class
  return task_class


for _task_class in (classification_tasks.GLUE_TASKS + qa_tasks.QA_TASKS +
                    tagging_tasks.TAGGING_TASKS):
  register(_task_class)


def check_task_names(names):
  """UserError listing the valid names if any of `names` is unknown."""
  unknown = [name for name in names if name not in TASKS]
  if unknown:
    raise UserError("unknown task %s in hparam 'task_names'; valid tasks: %s."
                    % (", ".join(repr(n) for n in unknown),
                       ", ".join(sorted(TASKS))))


def get_task(config, name, tokenizer):
  """The task called `name`, built for `config`."""
  check_task_names([name])
  return TASKS[name](config, tokenizer)
