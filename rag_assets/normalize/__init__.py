"""Layer 2: one adapter per parser into the StandardizedDocument IR, then shared repairs."""
