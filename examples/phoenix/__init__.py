"""Arize Phoenix as a local OTel backend: run it safely, export chaoskit's spans to it, read them back."""
