"""Measured quality: ``ee eval beir`` (a BEIR-layout set) and ``ee eval run`` (scenarios)."""
