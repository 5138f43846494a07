"""Weight initializers, one fresh instance per layer.

An unseeded tf_keras initializer instance returns the same values on every
call (for a smaller shape, the leading values of a larger one), so layers
sharing one instance start from repeated weights. Every layer that draws
random initial weights calls `truncated_normal` for its own instance.
"""

import tf_keras


def truncated_normal(initializer_range):
  """A new TruncatedNormal(stddev=initializer_range), BERT's initializer."""
  return tf_keras.initializers.TruncatedNormal(stddev=initializer_range)
