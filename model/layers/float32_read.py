"""Reading a float32 variable at full precision inside a mixed-precision call.

Under a mixed policy Keras wraps a layer's float32 weights in
AutoCastVariables, and inside any layer's call (the autocast scope) their
reads come out in the compute dtype: a [vocab, width] embedding table read
there is cast to bfloat16 whole, though the vocabulary heads compute their
logits in float32 and the lookup needs only the gathered rows.
"""

import tensorflow as tf
from tf_keras.src.mixed_precision import autocast_variable


def read_float32(variable):
  """The value of `variable` in its own dtype, also inside an autocast scope.

  Args: a variable (an AutoCastVariable or a plain one) or a tensor.
  Returns: a tensor of the variable's true dtype and shape; gradients flow
  to the variable as from any read.
  """
  with autocast_variable.enable_auto_cast_variables(None):
    return tf.convert_to_tensor(variable)
