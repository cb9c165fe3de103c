"""The statistics: the Plackett-Luce ranking, confidence, the GSPRT and TrueSkill ratings."""
