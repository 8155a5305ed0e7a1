"""Layer 5, the battery runner: scenarios, the (k, epsilon, lambda) grid, episodes and their results."""
