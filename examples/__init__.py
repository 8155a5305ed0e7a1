"""Runnable examples of chaoskit (no API key, no network)."""
