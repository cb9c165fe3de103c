"""Getting a bot in: its build, the check, the registry of versions and the league client."""
