"""`chaoskit suggest` examples: a legacy billing API whose tool contracts have known flaws, a LangGraph graph and an
OpenAPI file."""
