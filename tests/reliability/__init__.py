"""The reliability suite: concurrency, kill -9, hostile input, secrets, prompt injection, network.

Fast cases run by default; the long forms are marked ``slow`` and ``bench/soak.py`` runs them bigger.
"""
