"""What several test modules share: running arena as an operator would, configs, a league server. No test
module imports another; they import from here (and fixtures come from tests/conftest.py)."""
