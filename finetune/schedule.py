"""How many steps a fine-tuning trial takes and when it evaluates.

Plain Python (no TensorFlow), so bench/finetune_peer_hf.py gives the
transformers side the very same schedule.
"""

import math


def train_schedule(num_examples, batch_size, num_epochs):
  """(num_train_steps, steps at which to evaluate: each epoch end and last)."""
  steps_per_epoch = num_examples / float(batch_size)
  num_steps = max(1, int(num_examples * num_epochs / batch_size))
  eval_steps = {num_steps}
  for epoch in range(1, int(math.ceil(num_epochs)) + 1):
    eval_steps.add(min(num_steps, max(1, int(round(epoch * steps_per_epoch)))))
  return num_steps, sorted(eval_steps)
