"""GLUE sentence (pair) classification and regression tasks."""
