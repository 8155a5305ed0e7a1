"""Small plain-Python agents (no LLM, no LangChain) whose tools use ``@chaos``; used by the example battery."""
