"""Record once, replay with faults: an agent recorded against its tools, and a battery replayed on it offline."""
