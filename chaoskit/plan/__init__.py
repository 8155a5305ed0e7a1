"""Layer 1, plans: fault types, triggers, the Plan model and YAML loading (pure data and decisions)."""
