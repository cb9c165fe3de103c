"""The game itself: cards, the rule set, the engine, its narrator and a match's result model. Pure: no I/O."""
