"""Test doubles that stand in for real infrastructure: an OpenAI-compatible server, a tiny model."""
