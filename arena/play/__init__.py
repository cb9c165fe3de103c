"""A person at the table: a seat played from this process (the terminal), refereed as any bot's seat is."""
