"""The transformers side of bench/finetune_peer.py: one fine-tuning run.

`AutoModelForSequenceClassification.from_pretrained(model, num_labels=2)`
(BertForSequenceClassification for a BERT folder) trained
by a plain PyTorch loop (not the Trainer) with our fine-tuning recipe, so
the two sides differ in their implementations, not their settings:
  * the steps: `train_schedule` (finetune/trainer.py's): int(n * epochs /
    batch) full batches from one stream of examples reshuffled every epoch
    (finetune/preprocessing.py's train_dataset), evaluations at every
    epoch's end and at the last step;
  * torch.optim.AdamW (betas 0.9, 0.999) whose rate follows `lr_factor`
    (training/optimization.py's schedule: linear warm-up to the decay
    line, then linear decay to 0 at the last step), with layer-wise rates
    (finetune/layerwise_decay.py's "default" rule), no weight decay on
    LayerNorms and biases (training/optimization.py's NO_DECAY_PATTERNS),
    the gradients' global norm clipped;
  * inputs padded and truncated to max_seq_length as ours are.

Runs in a process of its own (torch and TensorFlow clash in one, see
tests/hf_reference.py): bench/finetune_peer.py calls `run` in a child.
"""

import os
import time

import numpy as np
import torch
import transformers

from finetune.schedule import train_schedule

# Our fine-tuning's task directory for SST-2 files (finetune/task_builder.py).
TASK = "sst"


def read_split(data_dir, split):
  """(sentences, labels) of finetuning_data/sst/<split>.tsv (GLUE SST-2:
  header `sentence<TAB>label`, no quoting, blank lines skipped)."""
  path = os.path.join(data_dir, "finetuning_data", TASK, split + ".tsv")
  with open(path, encoding="utf-8") as f:
    rows = [line.rstrip("\r\n").split("\t") for line in f if line.strip()]
  text, label = rows[0].index("sentence"), rows[0].index("label")
  return ([r[text] for r in rows[1:]],
          [int(r[label].strip()) for r in rows[1:]])


def lr_factor(step, num_steps, warmup_steps):
  """Our rate at optimizer step `step` (0-based) as a fraction of the peak:
  tf-models-official's LinearWarmup from 0 to the decay line's value at
  `warmup_steps`, over PolynomialDecay(power 1) from 1 to 0 at
  `num_steps` (training/optimization.py, learning_rate_schedule)."""
  decay = 1.0 - min(step, num_steps) / float(max(1, num_steps))
  if step < warmup_steps:
    return step / float(warmup_steps) * (1.0 - warmup_steps / num_steps)
  return decay


def param_groups(model, learning_rate, weight_decay, layer_decay):
  """AdamW parameter groups: our weight-decay set and layer-wise rates.

  Depth 0 is the embeddings, i + 1 encoder layer i; with n layers a depth
  gets learning_rate * layer_decay ** (n - depth). The pooler and the
  classifier are not in our encoder: they get learning_rate, as our head.
  """
  num_layers = model.config.num_hidden_layers
  base = model.base_model_prefix + "."  # "bert." or "electra."
  groups = {}
  for name, param in model.named_parameters():
    if name.startswith(base + "embeddings"):
      factor = layer_decay ** num_layers
    elif name.startswith(base + "encoder.layer."):
      depth = int(name.split(".")[3]) + 1
      factor = layer_decay ** (num_layers - depth)
    else:
      factor = 1.0
    decay = 0.0 if ("LayerNorm" in name or "bias" in name) else weight_decay
    group = groups.setdefault((factor, decay), dict(
        params=[], lr=learning_rate * factor, weight_decay=decay))
    group["params"].append(param)
  return list(groups.values())


def _batches(num_examples, batch_size, num_steps, seed):
  """Index arrays of `num_steps` full batches from a stream of examples
  reshuffled every epoch (batches run across epoch ends)."""
  rng = np.random.RandomState(seed)
  need = num_steps * batch_size
  stream = np.concatenate([rng.permutation(num_examples)
                           for _ in range(-(-need // num_examples))])
  return stream[:need].reshape(num_steps, batch_size)


def run(spec):
  """One run; `spec` is a dict of bench/finetune_peer.py's settings (model,
  data_dir, seed, threads, dtype, max_seq_length, batch_size, epochs,
  learning_rate, warmup_proportion, weight_decay, adam_epsilon, clip_norm,
  layerwise_lr_decay, log_every). Returns the accuracies, evaluation
  seconds and the training's marks for finetune_peer.add_training_time:
  `start`, `windows` {step: end time}, `evals` {step: seconds}."""
  torch.set_num_threads(spec["threads"])
  torch.set_num_interop_threads(spec["threads"])
  transformers.set_seed(spec["seed"])
  autocast = spec["dtype"] == "bfloat16"
  tokenizer = transformers.AutoTokenizer.from_pretrained(spec["model"])

  def encode(split):
    texts, labels = read_split(spec["data_dir"], split)
    enc = tokenizer(texts, padding="max_length", truncation=True,
                    max_length=spec["max_seq_length"], return_tensors="pt")
    return ({k: enc[k] for k in ("input_ids", "attention_mask",
                                 "token_type_ids")},
            torch.tensor(labels, dtype=torch.long))

  train_x, train_y = encode("train")
  dev_x, dev_y = encode("dev")
  model = transformers.AutoModelForSequenceClassification.from_pretrained(
      spec["model"], num_labels=2)
  batch = spec["batch_size"]
  num_steps, eval_steps = train_schedule(len(train_y), batch, spec["epochs"])
  warmup = int(spec["warmup_proportion"] * num_steps)
  optimizer = torch.optim.AdamW(
      param_groups(model, spec["learning_rate"], spec["weight_decay"],
                   spec["layerwise_lr_decay"]),
      betas=(0.9, 0.999), eps=spec["adam_epsilon"])
  scheduler = torch.optim.lr_scheduler.LambdaLR(
      optimizer, lambda step: lr_factor(step, num_steps, warmup))
  order = _batches(len(train_y), batch, num_steps, spec["seed"])

  def evaluate():
    model.eval()
    correct = 0
    with torch.inference_mode(), torch.autocast(
        "cpu", dtype=torch.bfloat16, enabled=autocast):
      for row in range(0, len(dev_y), batch):
        logits = model(**{k: v[row:row + batch]
                          for k, v in dev_x.items()}).logits
        correct += int((logits.float().argmax(-1) ==
                        dev_y[row:row + batch]).sum())
    model.train()
    return correct / float(len(dev_y))

  model.train()
  history, evals, windows = [], {}, {}
  start = time.perf_counter()
  for step, index in enumerate(order, 1):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
      logits = model(**{k: v[index] for k, v in train_x.items()}).logits
    loss = torch.nn.functional.cross_entropy(logits.float(), train_y[index])
    loss.backward()
    if spec["clip_norm"] > 0:
      torch.nn.utils.clip_grad_norm_(model.parameters(), spec["clip_norm"])
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    if step % spec["log_every"] == 0 or step in eval_steps:
      windows[step] = time.perf_counter()  # Where ours ends a window.
    if step in eval_steps:
      history.append(evaluate())
      evals[step] = time.perf_counter() - windows[step]
  begin = time.perf_counter()
  evaluate()  # A second pass over dev, as ours' over its copy.
  return dict(num_steps=num_steps, start=start, windows=windows, evals=evals,
              dev_accuracy=history[-1], dev_accuracy_best=max(history),
              eval_examples=len(dev_y), eval_seconds=evals[num_steps],
              eval2_seconds=time.perf_counter() - begin)
