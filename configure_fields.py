"""The hyperparameters of pre-training and fine-tuning: every field with its
default, accepted types, range and meaning (util/hparams.py `Field`).

`PRETRAIN_FIELDS` and `FINETUNE_FIELDS` are the keys `--hparams` accepts
(the original ELECTRA's, and ours beyond them); configure.py's config
objects are built from them and re-export them.
"""

from model import samplers
from model import transformer_hparams
from util import xla_fusion
from util.hparams import Field


_RUN_FIELDS = dict(
    seed=Field(42, int, "Seed of weights, masking, sampling and data order."),
    strategy=Field("default", str, "tf.distribute strategy.",
                   choices=("default", "mirrored", "multi_worker_mirrored",
                            "tpu")),
    num_cpu_devices=Field(0, int, "With strategy 'mirrored' and no GPU: split "
                          "the CPU into this many logical devices (testing).",
                          min=0),
    mixed_precision=Field("float32", str, "Compute dtype policy; sampling and "
                          "losses stay in float32. \"auto\": bfloat16 where "
                          "the hardware has it natively, else float32 "
                          "(util/dtype_policy.py).",
                          choices=("float32", "bfloat16", "float16", "auto")),
    jit_compile=Field(False, bool, "Compile the train step with XLA."),
    fuse_elementwise=Field("auto", str, "XLA fuses elementwise ops; \"auto\": "
                           "on for bfloat16 on CPU (util/xla_fusion.py).",
                           choices=xla_fusion.SETTINGS),
    initial_loss_scale=Field(32768.0, (float, int), "Initial dynamic loss "
                             "scale under float16 (tf_keras' default 2^15); "
                             "it halves on every step whose gradients "
                             "overflow, and that step is skipped.",
                             min=0, exclusive="min"),
    tpu_name=Field(None, (str, type(None)), "Cloud TPU name (strategy tpu)."),
    tpu_zone=Field(None, (str, type(None)), "Cloud TPU zone."),
    gcp_project=Field(None, (str, type(None)), "GCP project of the TPU."),
    model_size=Field("small", str, "Preset of docs/method.md §14.",
                     choices=tuple(transformer_hparams.MODEL_SIZES)),
    model_hparam_overrides=Field({}, dict, "Transformer fields to override, "
                                 "e.g. {\"hidden_size\": 128}."),
    embedding_size=Field(None, (int, type(None)), "Token embedding width; "
                         "None takes the model size's.", min=1),
    vocab_size=Field(30522, int, "Vocabulary size; must match vocab_file.",
                     min=1),
    do_lower_case=Field(True, bool, "Lower-case (and strip accents) text. "
                        "A source's tokenizer settings set it, else the "
                        "shards' manifest (pre-training)."),
    strip_accents=Field(None, (bool, type(None)), "Strip accents; None: as "
                        "do_lower_case (BERT's rule)."),
    max_seq_length=Field(128, int, "Tokens per example.", min=1),
    learning_rate=Field(5e-4, (float, int), "Peak learning rate.", min=0),
    weight_decay_rate=Field(0.01, (float, int), "AdamW weight decay (not on "
                            "LayerNorm or bias).", min=0),
    debug=Field(False, bool, "Tiny run: few steps, small batches."),
    log_every=Field(100, int, "Steps between progress lines.", min=1),
    peak_tflops=Field(0.0, (float, int), "Peak TFLOP/s of one replica's "
                      "device for MFU; 0: the GPU's published "
                      "peak, else a cached matmul probe (pretrain/peak.py).",
                      min=0),
)

_PRETRAIN_FIELDS = dict(
    do_train=Field(True, bool, "Pre-train."),
    do_eval=Field(False, bool, "Evaluate the last checkpoint."),
    electra_objective=Field(True, bool, "False trains a plain MLM (BERT)."),
    gen_weight=Field(1.0, (float, int), "Weight of the MLM loss.", min=0),
    generator_lr_multiplier=Field(1.0, (float, int), "Learning rate of the "
                                  "variables only G has (its transformer "
                                  "when untied, its MLM and sampling heads) "
                                  "as a multiple of learning_rate; > 1 lets "
                                  "a fresh G catch up with a released D.",
                                  min=0, exclusive="min"),
    embedding_lr_multiplier=Field(1.0, (float, int), "Learning rate of "
                                  "the word-embedding table(s) as a "
                                  "multiple of learning_rate; 0 keeps the "
                                  "start's table (a counted one, "
                                  "embedding_init 'corpus') while the "
                                  "transformers learn on top of it.", min=0),
    encoder_frozen_steps=Field(0, int, "Steps during which D's encoder "
                               "(and the embeddings) keep their start's "
                               "weights while the fresh heads and G learn, "
                               "for an init_checkpoint.", min=0),
    disc_weight=Field(50.0, (float, int), "lambda_D, weight of the "
                      "discriminator loss.", min=0),
    mask_prob=Field(0.15, (float, int), "Fraction of tokens masked.",
                    min=0, max=1, exclusive=("min", "max")),
    lr_decay_power=Field(1.0, (float, int), "1.0 is linear decay to 0."),
    num_warmup_steps=Field(10000, int, "Linear warmup steps.", min=0),
    iterations_per_loop=Field(200, int, "Train steps per tf.function call.",
                              min=1),
    save_checkpoints_steps=Field(1000, int, "Steps between checkpoints.",
                                 min=1),
    num_train_steps=Field(1000000, int, "Total train steps; 0 saves the "
                          "start as checkpoint 0.", min=0),
    num_eval_steps=Field(100, int, "Eval batches.", min=1),
    keep_checkpoint_max=Field(5, int, "Checkpoints kept.", min=1),
    accept_new_data=Field(False, bool, "Resume on training shards other "
                          "than the ones the checkpoint was trained on "
                          "(rebuilt, added or removed); the data stream "
                          "restarts at the same example offset."),
    eval_every=Field(0, int, "Evaluate every this many steps (0: only at "
                     "the end with do_eval).", min=0),
    untied_generator_embeddings=Field(False, bool, "Give G its own "
                                      "embeddings."),
    untied_mlm_output=Field(False, bool, "G's MLM head (and in HP modes the "
                            "sampling head) gets its own output embedding "
                            "table (ELECTRA ties it to the input "
                            "embeddings)."),
    untied_generator=Field(True, bool, "G is its own transformer (ELECTRA's "
                           "default); False shares D's weights."),
    generator_layers=Field(1.0, (float, int), "G's layers as a fraction of "
                           "D's.", min=0, max=1, exclusive="min"),
    generator_hidden_size=Field(0.25, (float, int), "G's hidden size as a "
                                "fraction of D's.",
                                min=0, max=1, exclusive="min"),
    generator_intermediate_size=Field(None, (int, type(None)), "G's FFN "
                                      "width; None: 4 x G's hidden size "
                                      "(ELECTRA's rule).", min=1),
    generator_num_attention_heads=Field(None, (int, type(None)), "G's "
                                        "attention heads; None: G's hidden "
                                        "size over D's head width.", min=1),
    disallow_correct=Field(False, bool, "Never sample the original token."),
    temperature=Field(1.0, (float, int), "Sampling temperature of p_G "
                      "(at step 0 when temperature_final is set).",
                      min=0, exclusive="min"),
    temperature_final=Field(None, (float, int, type(None)), "The "
                            "replacement curriculum: the temperature "
                            "reached at temperature_decay_steps and kept "
                            "after; None: constant temperature "
                            "(docs/method.md §5.1).", min=0, exclusive="min"),
    temperature_decay_steps=Field(0, int, "Steps from temperature to "
                                  "temperature_final; 0: all of "
                                  "num_train_steps.", min=0),
    temperature_schedule=Field("linear", str, "Shape of the decay: "
                               "\"linear\" or \"cosine\".",
                               choices=("linear", "cosine")),
    train_batch_size=Field(128, int, "Global train batch.", min=1),
    gradient_accumulation_steps=Field(
        1, int, "Split each replica's batch into this many micro-batches "
        "run in turn, one update per train_batch_size: the same update with "
        "a fraction of the activation memory.", min=1),
    eval_batch_size=Field(128, int, "Global eval batch.", min=1),
    adam_epsilon=Field(1e-6, (float, int), "AdamW epsilon.", min=0),
    clip_norm=Field(1.0, (float, int), "Gradient clipping global norm.", min=0),
    # Learned replacement sampling (docs/method.md §4-§12).
    sampling=Field("mlm", str, "Replacement sampler: 'mlm' (ELECTRA, from "
                   "p_G), 'uniform', 'hp_loss' or 'hp_dist' "
                   "(model/samplers.py).", choices=samplers.NAMES),
    focal_gamma=Field(0.0, (float, int), "Focal MLM loss gamma; 0 is "
                      "cross-entropy. Our choice: 0 default, 1 in HP runs.",
                      min=0),
    sampling_weight=Field(1.0, (float, int), "lambda_S, weight of the "
                          "sampling-head loss.", min=0),
    sampling_warmup_steps=Field(0, int, "Sample from p_G for this many steps "
                                "while the sampling head trains.", min=0),
    disc_importance_weighting=Field(False, bool, "Weight D's loss at masked "
                                    "positions by p_G/p_S (ablation)."),
    disc_importance_weight_clip=Field(10.0, (float, int), "Clip of the "
                                      "self-normalised p_G/p_S weights of "
                                      "disc_importance_weighting.",
                                      min=0, exclusive="min"),
    hp_dist_weight_clip=Field(10.0, (float, int), "HP-Dist: clip the "
                              "self-normalised importance weights here.",
                              min=0, exclusive="min"),
    hp_loss_min_estimate=Field(1e-6, (float, int), "HP-Loss: clamp L^_D "
                               "from below before its log.",
                               min=0, exclusive="min"),
    relative_position=Field(False, bool, "T5-style relative position bias in "
                            "G and D."),
    relative_num_buckets=Field(32, int, "Relative position buckets.", min=1),
    relative_max_distance=Field(128, int, "Largest bucketed distance.", min=1),
    max_predictions_per_seq=Field(None, (int, type(None)), "None: "
                                  "int((mask_prob + 0.005) * max_seq_length).",
                                  min=1),
    pretrain_tfrecords=Field(None, (str, type(None)), "Shard glob; default "
                             "<data-dir>/pretrain_tfrecords/"
                             "pretrain_data.tfrecord*."),
    eval_tfrecords=Field(None, (str, type(None)), "Held-out shard glob for "
                         "evaluation; default: the train glob."),
    vocab_file=Field(None, (str, type(None)), "A vocab.txt or SentencePiece "
                     ".model; default the data dir's (text/vocab_layout.py)."),
    model_dir=Field(None, (str, type(None)), "Default "
                    "<data-dir>/models/<model-name>."),
    init_checkpoint=Field(None, (str, type(None)), "Warm start: a "
                          "pre-training checkpoint (prefix or directory), "
                          "Hugging Face folder(s) or a Google TF1 checkpoint "
                          "(interop/loader.py) "
                          "whose model weights start a run whose model dir "
                          "has no checkpoint yet. Weights it lacks (e.g. D's "
                          "head after a plain MLM) start fresh; the "
                          "optimizer and step start at 0."),
    generator_checkpoint=Field(None, (str, type(None)), "A fixed "
                               "generator (Fast-ELECTRA, Dong et al. 2024): "
                               "a pre-training checkpoint (prefix or "
                               "directory) whose generator starts G, which "
                               "then is not trained (a learned sampling "
                               "head still is). Needs untied_generator and "
                               "untied_generator_embeddings; pair it with a "
                               "decaying temperature."),
    embedding_init=Field("random", str, "How a new run's word-embedding "
                         "table starts: 'random', or 'corpus', the PPMI-SVD "
                         "of the training shards' co-occurrence counts "
                         "(pretrain/corpus_embeddings.py); ignored with "
                         "init_checkpoint.", choices=("random", "corpus")),
    shuffle_buffer=Field(10000, int, "Examples in the shuffle buffer.", min=1),
    allow_casing_mismatch=Field(False, bool, "Train although the shards' "
                                "manifest records another casing "
                                "(do_lower_case, strip_accents) than the "
                                "model's; refused otherwise."),
)

_FINETUNE_FIELDS = dict(
    task_names=Field(["sst"], list, "Tasks to fine-tune, in turn."),
    do_train=Field(True, bool, "Fine-tune."),
    do_eval=Field(True, bool, "Evaluate on dev."),
    write_test_outputs=Field(False, bool, "Write test-set predictions."),
    num_trials=Field(1, int, "Trials with different seeds.", min=1),
    init_checkpoint=Field(None, (str, type(None)), "Checkpoint to start from "
                          "(prefix, directory, pre-training model dir, HF "
                          "folder or Google TF1 checkpoint); "
                          "default: the pre-trained model in model_dir; "
                          "\"none\": random initialisation."),
    layerwise_lr_decay=Field(0.8, (float, int), "Layer-wise LR decay d; "
                             "see layerwise_lr_decay_rule.",
                             min=0, max=1, exclusive="min"),
    layerwise_lr_decay_rule=Field(
        "default", str, "How d scales the encoder's rates (n layers): "
        "\"default\" gives the top layer lr, layer i (0 = bottom) "
        "lr * d^(n-1-i), the embeddings lr * d^n; \"electra\" reproduces "
        "the TF1 ELECTRA code, every rate d^2 lower (top layer lr * d^2). "
        "Task heads get lr under both.", choices=("default", "electra")),
    reinit_top_layers=Field(0, int, "Re-initialise this many of the "
                            "pre-trained encoder's top layers before "
                            "fine-tuning (Zhang et al. 2021); 0 keeps "
                            "them all.", min=0),
    shrink_to_fresh=Field(1.0, (float, int), "Fine-tune from keep * w + "
                          "(1 - keep) * w_fresh for every encoder weight "
                          "(Ash and Adams 2020's shrink and perturb, with a "
                          "fresh encoder as the noise); 1 keeps the "
                          "pre-trained start as it is.", min=0, max=1),
    classifier_pooling=Field("cls", str, "Sentence (pair) tasks: what the "
                             "head reads: \"cls\" (ELECTRA: the [CLS] "
                             "state) or \"mean\" (the mean over real "
                             "tokens).", choices=("cls", "mean")),
    num_train_epochs=Field(3.0, (float, int), "Training epochs.",
                           min=0, exclusive="min"),
    warmup_proportion=Field(0.1, (float, int), "Warmup fraction of steps.",
                            min=0, max=1, exclusive="max"),
    train_batch_size=Field(32, int, "Global train batch.", min=1),
    eval_batch_size=Field(32, int, "Eval batch.", min=1),
    predict_batch_size=Field(32, int, "Prediction batch.", min=1),
    adam_epsilon=Field(1e-6, (float, int), "AdamW epsilon.", min=0),
    clip_norm=Field(1.0, (float, int), "Gradient clipping global norm.", min=0),
    max_query_length=Field(64, int, "SQuAD: query tokens.", min=1),
    doc_stride=Field(128, int, "SQuAD: window stride.", min=1),
    n_best_size=Field(20, int, "SQuAD: n-best spans.", min=1),
    max_answer_length=Field(30, int, "SQuAD: longest answer in tokens.", min=1),
    answerable_weight=Field(0.5, (float, int), "SQuAD 2.0: weight of the "
                            "answerability loss.", min=0),
    relative_position=Field(False, bool, "Must match the pre-trained model."),
    relative_num_buckets=Field(32, int, "Must match the pre-trained model.",
                               min=1),
    relative_max_distance=Field(128, int, "Must match the pre-trained model.",
                                min=1),
    vocab_file=Field(None, (str, type(None)), "A vocab.txt or SentencePiece "
                     ".model; default the data dir's (text/vocab_layout.py)."),
    model_dir=Field(None, (str, type(None)), "Default "
                    "<data-dir>/models/<model-name>."),
    max_unk_fraction=Field(0.5, (float, int), "Refuse a task whose training "
                           "text's tokens are more than this share [UNK] "
                           "(above 0.05 a warning names the rate); 1 "
                           "accepts any.", min=0, max=1),
)

PRETRAIN_FIELDS = dict(_RUN_FIELDS, **_PRETRAIN_FIELDS)
FINETUNE_FIELDS = dict(_RUN_FIELDS, **_FINETUNE_FIELDS)
FINETUNE_FIELDS["learning_rate"] = Field(3e-4, (float, int), "Peak LR.",
                                         min=0)
FINETUNE_FIELDS["log_every"] = Field(50, int, "Steps between progress lines.",
                                     min=1)
