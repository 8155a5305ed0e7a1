"""Layer 6, reports of a battery: text tables, JSON, JUnit, the CI verdict."""
