"""The parts of the `spec` template, one rule each; `templates/spec.py` assembles them."""
