"""Layer 3: templates format the IR into chunks; they never know which parser ran."""
