"""Data tables for tests/engine/test_parsing*.py: replies as models emit them, with their parse."""
