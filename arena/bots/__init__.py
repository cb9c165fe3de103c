"""A bot on disk: its manifest, its files, an archive of it and a new bot's scaffold."""
