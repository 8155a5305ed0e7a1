"""Jaeger v2 as a local backend: running it for tests (local.py) and with Docker (docker-compose.yml)."""
