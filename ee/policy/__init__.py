"""Pure policy: trust classes, feedback and decay math, secret redaction, the prompt-injection guard."""
