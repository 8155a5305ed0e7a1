"""The e-commerce example domain: an in-memory shop, its scripted agents of known quality, oracles, scenarios.

``agents.careful()`` (and ``naive``, ``give_up``, ``bluffer``, ``obeys_injection``) build a fresh agent with its
own :class:`examples.shop.env.ShopEnv`; ``verify`` holds the end-state oracles; ``scenarios/`` the battery and
``expected.yaml`` which agent should pass which scenario, and why.
"""
