"""The scheduling domain of the example battery: a calendar of rooms and meetings, its agent and its oracles."""
